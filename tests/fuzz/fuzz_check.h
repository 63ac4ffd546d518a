// Helpers shared by the fuzz targets (tests/fuzz/*_fuzz.cc).
//
// FUZZ_CHECK states a property the code under test promises for every
// input (a documented round trip, an idempotence): when it does not hold,
// the input is a finding, reported and turned into a crash so libFuzzer
// keeps it. Sanitizer reports (ASan, UBSan, leaks) need no check: they
// abort by themselves.
#pragma once

#include <cstdio>
#include <cstdlib>

#include "util/log.h"

#define FUZZ_CHECK(cond, what)                                                      \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: fuzz property violated: %s (%s)\n", __FILE__, \
                   __LINE__, what, #cond);                                          \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)

namespace roced::fuzz {

// The agent logs rejected input at warning level; thousands of lines a
// second would only slow the fuzzer down. Errors still show.
inline void QuietLogs() { log::SetLevel(log::Level::kError); }

}  // namespace roced::fuzz

// The process's open-file limit (RLIMIT_NOFILE): raised once at start, and
// read by those who size their descriptor use from it (the gRPC TCP
// listener's connection cap, the counter files' cache).
#pragma once

#include <cstdint>

namespace roced::util {

struct FdLimit {
  uint64_t before = 0;  // the soft limit found
  uint64_t soft = 0;    // the soft limit now
  uint64_t hard = 0;
};

// The most the soft limit is raised to when the hard limit is unlimited
// (the kernel's fs.nr_open default).
inline constexpr uint64_t kMaxFdLimit = 1 << 20;

// Raises the soft limit to the hard one (at most kMaxFdLimit), where the
// kernel allows; `soft` is what it is afterwards (`before` when setrlimit
// refused).
FdLimit RaiseFdLimit();

// The soft limit now (kMaxFdLimit when unlimited or unreadable).
uint64_t SoftFdLimit();

}  // namespace roced::util

// Log lines of one kind (a key: a source location, a caller) at most once
// per interval; the rest are counted and the count is given with the next
// line of that kind that is logged. For lines a remote peer can cause at
// will (gRPC's "Handshake failed" per refused TLS connection): without a
// limit, a flood of them grows stderr (the journal) without bound.
//
// At most max_keys kinds are tracked per interval; further ones share one
// "other" kind, so memory stays bounded whatever the keys. Time is given,
// not read. Thread-safe (one mutex, a leaf).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace roced::util {

class LogLimiter {
 public:
  LogLimiter(absl::Duration interval, size_t max_keys) : interval_(interval), max_keys_(max_keys) {}

  // A line of `key` at `now`: nullopt when it is to be dropped (counted);
  // else the number dropped since the last one of its kind was logged.
  std::optional<uint64_t> Allow(absl::string_view key, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Kind {
    absl::Time logged = absl::InfinitePast();
    uint64_t dropped = 0;
  };

  const absl::Duration interval_;
  const size_t max_keys_;
  std::mutex mu_;
  std::map<std::string, Kind, std::less<>> kinds_ ABSL_GUARDED_BY(mu_);
  Kind other_ ABSL_GUARDED_BY(mu_);
};

}  // namespace roced::util

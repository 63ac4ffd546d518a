// Link flaps of the RoCE netdevs: when each netdev's carrier changed,
// from its carrier_changes count (hal/carrier_changes.h) polled by the
// agent. Each rise of the count records that many changes at the time of
// the reading (so a flap is timed to within one poll). The first reading of
// a netdev only takes a baseline: changes from before the agent watched
// have no time. A count that went down (the netdev was re-created) is a
// new baseline too.
//
// Bounded: per netdev at most `max_times` change times (the oldest go
// first) and none older than `window`; netdevs no longer reported by
// Retain() are dropped.
//
// Times are the wall clock's (they are shown to operators); the caller
// passes them, so tests drive the history with their own clock.
// Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace roced::metrics {

struct LinkFlaps {
  std::string netdev;
  // Carrier changes within `window` before the query (at most max_times).
  size_t changes = 0;
  absl::Duration window;
  // The newest change seen; nullopt when none was seen while watched.
  std::optional<absl::Time> last_change;
  // The kernel's count at the latest reading (since the netdev was created).
  uint64_t carrier_changes = 0;
  // Since the first reading: changes before it are not timed.
  absl::Time watched_since;
  // The query's time.
  absl::Time as_of;
};

class LinkFlapHistory {
 public:
  static constexpr absl::Duration kWindow = absl::Hours(6);
  static constexpr size_t kMaxTimes = 64;
  explicit LinkFlapHistory(absl::Duration window = kWindow, size_t max_times = kMaxTimes)
      : window_(window), max_times_(max_times) {}

  // One reading of `netdev`'s carrier_changes at `now` (not going backwards).
  void Observe(const std::string& netdev, uint64_t carrier_changes, absl::Time now);
  // Forgets the netdevs not in `netdevs`.
  void Retain(const std::set<std::string>& netdevs);
  // Every watched netdev, as at `now`, by name.
  std::vector<LinkFlaps> Flaps(absl::Time now) const;

 private:
  struct Netdev {
    uint64_t count = 0;
    absl::Time since;
    std::deque<absl::Time> times;  // oldest first
  };
  void Expire(absl::Time now, Netdev* n) const;

  const absl::Duration window_;
  const size_t max_times_;
  mutable std::mutex mu_;
  std::map<std::string, Netdev> netdevs_;  // guarded by mu_
};

}  // namespace roced::metrics

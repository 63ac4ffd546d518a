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
// roced's own link toggles are not flaps: mlx5 toggles the port link on
// every pfc_en change (en_dcbnl.c, mlx5e_dcbnl_ieee_setpfc ->
// mlx5_toggle_port_link), so a PFC apply costs two carrier changes. The
// reconciler notes each such write (NoteOwnToggle); the next rises of the
// count within kOwnToggleGrace after it, up to two per toggle, are counted
// as the agent's own and kept apart. A real flap inside that grace is
// taken for the toggle's: the price of not blaming the cable for roced's
// own writes.
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
  // Carrier changes within `window` before the query (at most max_times),
  // not counting roced's own link toggles.
  size_t changes = 0;
  // Those roced caused itself (a PFC write on mlx5) within `window`.
  size_t own_changes = 0;
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
  // How long after roced's own toggle a carrier change is taken for it:
  // the carrier's down/up plus the agent's next reading (a state change,
  // or the counters' 10 s pass).
  static constexpr absl::Duration kOwnToggleGrace = absl::Seconds(15);
  // Carrier changes one toggle makes (down, up).
  static constexpr uint32_t kChangesPerToggle = 2;
  explicit LinkFlapHistory(absl::Duration window = kWindow, size_t max_times = kMaxTimes)
      : window_(window), max_times_(max_times) {}

  // One reading of `netdev`'s carrier_changes at `now` (not going backwards).
  void Observe(const std::string& netdev, uint64_t carrier_changes, absl::Time now);
  // roced is about to toggle `netdev`'s link itself at `at` (a pfc_en
  // write on mlx5). Any thread.
  void NoteOwnToggle(const std::string& netdev, absl::Time at);
  // Forgets the netdevs not in `netdevs`.
  void Retain(const std::set<std::string>& netdevs);
  // Every watched netdev, as at `now`, by name.
  std::vector<LinkFlaps> Flaps(absl::Time now) const;

 private:
  struct OwnToggle {
    absl::Time at;
    uint32_t credit = kChangesPerToggle;  // carrier changes it may still explain
  };
  struct Netdev {
    bool read = false;  // false: only NoteOwnToggle() has met it
    uint64_t count = 0;
    absl::Time since;
    std::deque<absl::Time> times;      // oldest first
    std::deque<absl::Time> own_times;  // roced's own toggles' changes, oldest first
    std::deque<OwnToggle> toggles;     // noted, not yet used up nor expired
  };
  // How many of `rise` changes seen at `now` roced's own toggles explain
  // (using their credit up).
  static uint64_t TakeOwn(Netdev* n, uint64_t rise, absl::Time now);
  void Expire(absl::Time now, Netdev* n) const;

  const absl::Duration window_;
  const size_t max_times_;
  mutable std::mutex mu_;
  std::map<std::string, Netdev> netdevs_;  // guarded by mu_
};

}  // namespace roced::metrics

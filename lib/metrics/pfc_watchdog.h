// PFC storm watchdog, after SONiC's pfcwd: per netdev and priority it polls
// the received-PFC-pause counter every poll interval. A priority that
// received pause frames in every poll for the detection time is "stormed"
// (a peer keeps it paused: head-of-line blocking that spreads through the
// fabric); it is restored once no pause frame arrived for the restoration
// time. Action is alert-only: roced_pfc_storm{netdev,priority} (0/1),
// roced_pfc_storm_events_total{netdev,priority}, and a callback per state
// change so the agent can publish an event and log a line.
//
// Timing, with polls at t0 < t1 < ... and d_k the pauses counted in
// (t_{k-1}, t_k]: when d_j..d_k are all non-zero the priority has been
// pausing since t_{j-1}; it is stormed at the first poll where
// t_k - t_{j-1} >= detection time. With the defaults (100 ms, 200 ms) a
// storm that starts between two polls is reported at most 200 ms after it
// started, plus one poll's lateness. Restoration is symmetric over polls
// with d = 0. The first poll of a (netdev, priority) only takes a baseline;
// a counter that went backwards (driver reload) restarts from its new value.
//
// Only what can storm is polled: a netdev is watched on the priorities
// that have PFC enabled (a pause frame for a priority without PFC is not
// honoured, and mlx5 does not even count it), so a node without PFC costs
// no polls at all: with nothing to watch the thread sleeps until
// SetNetdevs() gives it something.
//
// The counter source is an interface: the real one reads ethtool
// (rx_prio<N>_pause), tests inject one and drive PollOnce() with their own
// clock, since no kernel on a build machine can make pause counters climb.
//
// Threads: Start() runs one polling thread; PollOnce() may instead be called
// directly (not both). SetNetdevs(), SetOptions(), Status() and Collect()
// may be called from any thread. The callback runs on the thread that
// caused the change (the poller, or SetNetdevs()'s caller) with no lock
// held; it must not call back into the watchdog.
#pragma once

#include <cstdint>
#include <functional>
#include <condition_variable>
#include <map>
#include <mutex>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hal/ethtool_stats.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "roced/v1/config.pb.h"
#include "util/triggered_loop.h"

namespace roced::metrics {

// Where the watchdog gets received-pause counts from.
class PauseCounterSource {
 public:
  virtual ~PauseCounterSource() = default;
  // Cumulative PFC pause frames received on `netdev`, by priority. A
  // priority the driver does not count (mlx5 counts only PFC-enabled ones)
  // is absent. An error skips this netdev for one poll.
  virtual absl::StatusOr<std::map<uint32_t, uint64_t>> RxPauseFrames(
      const std::string& netdev) = 0;
};

// The real source: rx_prio<N>_pause from the netdev's ethtool statistics.
class EthtoolPauseCounterSource : public PauseCounterSource {
 public:
  // `reader` must outlive this object.
  explicit EthtoolPauseCounterSource(hal::NetdevStatsReader* reader) : reader_(reader) {}
  absl::StatusOr<std::map<uint32_t, uint64_t>> RxPauseFrames(const std::string& netdev) override;

 private:
  hal::NetdevStatsReader* reader_;
};

struct PfcWatchdogOptions {
  absl::Duration poll_interval = absl::Milliseconds(100);
  absl::Duration detection_time = absl::Milliseconds(200);
  absl::Duration restoration_time = absl::Milliseconds(400);

  // Durations set in `config` override the defaults above.
  static PfcWatchdogOptions FromConfig(const roced::v1::PfcWatchdogConfig& config);
  bool operator==(const PfcWatchdogOptions&) const = default;
};

// A netdev to watch and its priorities (bit N = priority N).
struct WatchedNetdev {
  std::string netdev;
  // kAllPriorities: every priority the driver counts (for a netdev whose
  // PFC state cannot be read).
  uint8_t priorities = 0xff;
  bool operator==(const WatchedNetdev&) const = default;
};
inline constexpr uint8_t kAllPriorities = 0xff;

// A change of storm state.
struct PfcStormTransition {
  std::string netdev;
  uint32_t priority = 0;
  bool stormed = false;
  // The cumulative rx pause counter at the change.
  uint64_t rx_pause_frames = 0;
  // Pause frames received over `window`: the continuous pausing that
  // triggered detection, 0 over the quiet time that restored it.
  uint64_t window_pause_frames = 0;
  absl::Duration window;
  // Why the state ended other than by restoration ("netdev no longer
  // watched", "priority no longer counted"); empty otherwise.
  std::string reason;
};

class PfcWatchdog : public prometheus::Collectable {
 public:
  using Callback = std::function<void(const PfcStormTransition&)>;

  // `source` must outlive the watchdog. `on_change` may be empty.
  PfcWatchdog(PauseCounterSource* source, PfcWatchdogOptions options, Callback on_change);
  // Stops the polling thread.
  ~PfcWatchdog() override;
  PfcWatchdog(const PfcWatchdog&) = delete;
  PfcWatchdog& operator=(const PfcWatchdog&) = delete;

  // The netdevs to watch, each on its priorities. State of netdevs and
  // priorities no longer listed is dropped (at the next poll for a
  // priority); a stormed one gets a final transition to not stormed. A
  // netdev listed twice is watched on the union of its priorities; one with
  // no priority is not watched. From an empty set to a non-empty one the
  // polling thread wakes at once.
  void SetNetdevs(std::vector<WatchedNetdev> netdevs);
  // Each on every priority the driver counts.
  void SetNetdevsAllPriorities(const std::vector<std::string>& netdevs);
  // What SetNetdevs() left to watch, by name.
  std::vector<WatchedNetdev> Watched() const;
  void SetOptions(PfcWatchdogOptions options);
  PfcWatchdogOptions options() const;

  // One poll of every watched netdev, as at monotonic time `now` (which
  // must not go backwards between calls).
  void PollOnce(absl::Time now);

  // Polls every poll_interval on a thread, with a monotonic clock.
  void Start();
  void Stop();

  struct PriorityStatus {
    std::string netdev;
    uint32_t priority = 0;
    bool stormed = false;
    uint64_t storms = 0;  // storms detected since the priority was first seen
    uint64_t rx_pause_frames = 0;
  };
  // Every (netdev, priority) with a baseline, ordered.
  std::vector<PriorityStatus> Status() const;

  // roced_pfc_storm and roced_pfc_storm_events_total.
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  struct PriorityState {
    uint64_t last = 0;
    absl::Time last_poll;
    // Start of the current run of polls that all saw pauses, and the
    // counter then; empty when the last poll saw none.
    std::optional<absl::Time> pausing_since;
    uint64_t count_at_pausing_start = 0;
    // Start of the current run of polls without pauses while stormed.
    std::optional<absl::Time> quiet_since;
    bool stormed = false;
    uint64_t storms = 0;
  };
  using Key = std::pair<std::string, uint32_t>;

  void Update(const Key& key, uint64_t value, absl::Time now, PriorityState* state,
              std::vector<PfcStormTransition>* changes);
  void Notify(const std::vector<PfcStormTransition>& changes);
  const WatchedNetdev* FindLocked(const std::string& netdev) const;
  // The polling loop: wait until the next poll is due (never, with nothing
  // to watch), poll.
  absl::Duration UntilNextPoll();
  void PollNow();

  PauseCounterSource* const source_;
  const Callback on_change_;

  // std::mutex, not absl::Mutex: Debian's Abseil is not built with TSan,
  // so absl::Mutex's ordering is invisible to it (false races in TSan runs).
  // mu_ guards the members below it, up to poll_mu_; Update() needs it held.
  mutable std::mutex mu_;
  PfcWatchdogOptions options_;
  std::vector<WatchedNetdev> netdevs_;  // sorted by name, one entry each
  std::map<Key, PriorityState> states_;

  // Serializes polls: a poll reads the source without holding mu_.
  std::mutex poll_mu_;
  // When the loop's last poll started (the loop's thread only).
  absl::Time last_poll_ = absl::InfinitePast();
  // Last: its thread uses everything above.
  util::TriggeredLoop loop_{{"roced-pfcwd", "poll", /*run_first=*/true},
                            [this] { return UntilNextPoll(); },
                            [this](const std::string&) { PollNow(); }};
};

}  // namespace roced::metrics

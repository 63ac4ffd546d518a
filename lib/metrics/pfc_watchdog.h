// PFC storm watchdog, after SONiC's pfcwd but judged on what the NIC's
// driver counts. A storm is a queue that makes no progress while paused
// (head-of-line blocking that spreads through the fabric); steady incast
// congestion also pauses a priority in every poll, but its traffic still
// drains, and that is not a storm. Per netdev and priority with PFC on:
//   - stormed when, over the detection time, every poll saw received pause
//     frames (rx_prio<N>_pause rose) and the queue made no progress:
//       (a) tx_prio<N>_packets did not rise (mlx5: per-priority traffic
//           group, PPCNT per priority), or, where the driver has no such
//           counter,
//       (b) rx_prio<N>_pause_duration (microseconds) covered at least 90%
//           of the window, or, where it has neither,
//       (c) the pauses alone (SONiC's rule; the transition's `why` says so);
//   - stormed at once when the NIC's own storm counter rises: mlx5's
//     tx_pause_storm_error_events (device_stall_critical_watermark_cnt: the
//     port stalled past the critical watermark, the PFC storm prevention
//     timeout). It is port-wide, so it is attributed to every watched
//     priority that sent or received pause frames in that read, and to every
//     watched priority when none did: no "all" series, so the gauge, the
//     events, Status() and the confirm policy's pfc_storm gate keep their
//     numeric priority. The minor watermark's tx_pause_storm_warning_events
//     only keeps the polls fast;
//   - restored when, over the restoration time (reads after the storm was
//     declared only), no poll saw pause frames, or the queue progressed:
//     tx_prio<N>_packets rose in every poll (a), or the pause duration
//     covered less than 90% of the window (b).
// Action is alert-only: roced_pfc_storm{netdev,priority} (0/1),
// roced_pfc_storm_events_total{netdev,priority}, and a callback per state
// change (with the rule, a sentence and the figures) so the agent can
// publish an event and log a line.
//
// Timing, with polls at t0 < t1 < ...: when polls t_{j+1}..t_k all saw
// pauses (and none of them came after a backed-off wait), the window
// (t_j, t_k] with t_k - t_j >= detection time is judged at t_k, t_j the
// latest such poll. With the defaults (100 ms, 200 ms) a storm that starts
// between two fast polls is reported at most 200 ms after it started, plus
// one poll's lateness; a storm that turns a draining queue stuck is reported
// 200 ms after its last transmit progress was read. Restoration is judged
// the same way over the restoration time. The first read of a (netdev,
// priority) only takes a baseline; a counter that went backwards (driver
// reload) makes the read a new baseline (no storm, no progress from it).
//
// Cost: reads cost what the driver makes them cost. On mlx5 every read
// (ETHTOOL_GSTATS: mlx5e_get_ethtool_stats -> mlx5e_stats_update) runs
// every statistics group's update_stats, each one or more firmware
// commands: 8 PPCNT reads for the per-priority group alone, 16 more per
// traffic class where the NIC has sbcam_reg, the 802.3/2863/2819/phy/
// extended PPCNT groups, MPCNT, the Q, vport and vNIC counters (35 on a
// current ConnectX), plus the PFCC queries that size and fill the
// per-priority PFC group: about 40 firmware commands per read. So each
// netdev is read once per poll (one read gives every priority and
// counter), and only as often as needed: at the poll interval while
// anything pauses, is stormed or was in the last second, else at the idle
// interval (1 s), back to the poll interval as soon as a read shows pause
// frames or a storm counter rising. Per watched netdev: idle 1 read/s
// (~40 firmware commands/s on mlx5); pausing or stormed 10 reads/s
// (~400/s) with the defaults. A
// storm that starts while a netdev is backed off is seen by the next read
// (<= 1 s), then judged over fast polls: reported <= 1 s + detection time
// + a poll after it started.
//
// Only what can storm is polled: a netdev is watched on the priorities
// that have PFC enabled (a pause frame for a priority without PFC is not
// honoured, and mlx5 does not even count it), so a node without PFC costs
// no polls at all: with nothing to watch the thread sleeps until
// SetNetdevs() gives it something.
//
// The counter source is an interface: the real one reads ethtool, tests
// inject one and drive PollOnce() with their own clock, since no kernel on a
// build machine can make pause counters climb.
//
// Threads: Start() runs one polling thread; PollOnce() may instead be called
// directly (not both). SetNetdevs(), SetOptions(), Status() and Collect()
// may be called from any thread. The callback runs on the thread that
// caused the change (the poller, or SetNetdevs()'s caller) with no lock
// held; it must not call back into the watchdog.
#pragma once

#include <cstdint>
#include <deque>
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
#include "util/clock.h"
#include "util/triggered_loop.h"

namespace roced::metrics {

// One read of a netdev's statistics, as the watchdog judges them. Counters
// are cumulative; an optional one is absent where the driver has none.
struct PauseReading {
  struct Priority {
    uint64_t rx_pause = 0;                         // rx_prio<N>_pause
    std::optional<uint64_t> rx_pause_duration_us;  // rx_prio<N>_pause_duration
    std::optional<uint64_t> tx_pause;              // tx_prio<N>_pause
    std::optional<uint64_t> tx_packets;            // tx_prio<N>_packets
    bool operator==(const Priority&) const = default;
  };
  // The priorities the driver counts received pause frames of (mlx5: only
  // PFC-enabled ones), with their other counters where it has them.
  std::map<uint32_t, Priority> priorities;
  // Port-wide: tx_pause_storm_error_events (mlx5's
  // device_stall_critical_watermark_cnt) and tx_pause_storm_warning_events
  // (device_stall_minor_watermark_cnt).
  std::optional<uint64_t> storm_errors;
  std::optional<uint64_t> storm_warnings;
};

// Where the watchdog gets its counters from.
class PauseCounterSource {
 public:
  virtual ~PauseCounterSource() = default;
  // Every counter the watchdog judges on `netdev`, from ONE read of the
  // driver's statistics. An error skips this netdev for one poll.
  virtual absl::StatusOr<PauseReading> Read(const std::string& netdev) = 0;
  // Cumulative PFC pause frames received on `netdev`, by priority (one
  // Read()). A priority the driver does not count is absent.
  absl::StatusOr<std::map<uint32_t, uint64_t>> RxPauseFrames(const std::string& netdev);
};

// The real source: one ethtool statistics read (rx_prio<N>_pause,
// rx_prio<N>_pause_duration, tx_prio<N>_pause, tx_prio<N>_packets,
// tx_pause_storm_error_events, tx_pause_storm_warning_events).
class EthtoolPauseCounterSource : public PauseCounterSource {
 public:
  // `reader` must outlive this object.
  explicit EthtoolPauseCounterSource(hal::NetdevStatsReader* reader) : reader_(reader) {}
  absl::StatusOr<PauseReading> Read(const std::string& netdev) override;

 private:
  hal::NetdevStatsReader* reader_;
};

// The counters of one `ethtool -S` read, as the watchdog judges them.
PauseReading PauseReadingOf(const std::vector<hal::EthtoolStat>& stats);

struct PfcWatchdogOptions {
  absl::Duration poll_interval = absl::Milliseconds(100);
  absl::Duration detection_time = absl::Milliseconds(200);
  absl::Duration restoration_time = absl::Milliseconds(400);
  // A netdev with no pause frame, storm counter rise or stormed priority
  // for this long is read only this often (never less often than
  // poll_interval); a read showing pauses returns it to poll_interval.
  absl::Duration idle_poll_interval = absl::Seconds(1);

  // Durations set in `config` override the defaults above.
  static PfcWatchdogOptions FromConfig(const roced::v1::PfcWatchdogConfig& config);
  bool operator==(const PfcWatchdogOptions&) const = default;
};

// The share of a window rx_prio<N>_pause_duration must cover for rule (b).
inline constexpr double kStormPausedFraction = 0.9;

// A netdev to watch and its priorities (bit N = priority N).
struct WatchedNetdev {
  std::string netdev;
  // kAllPriorities: every priority the driver counts (for a netdev whose
  // PFC state cannot be read).
  uint8_t priorities = 0xff;
  bool operator==(const WatchedNetdev&) const = default;
};
inline constexpr uint8_t kAllPriorities = 0xff;

// What a storm state change was judged on.
enum class PfcStormRule {
  kNone,                // an end for `reason` (no longer watched, ...)
  kNoTransmitProgress,  // stormed: pauses in every poll, tx_prio<N>_packets flat
  kPauseDuration,       // stormed: pauses in every poll, paused >= 90% of the window
  kPausesOnly,          // stormed: pauses in every poll, the driver counts neither
  kNicStormCounter,     // stormed: tx_pause_storm_error_events rose
  kQuiet,               // restored: no pause frame over the window
  kTransmitProgress,    // restored: tx_prio<N>_packets rose in every poll
  kPauseDurationLow,    // restored: paused < 90% of the window
};

// A change of storm state.
struct PfcStormTransition {
  std::string netdev;
  uint32_t priority = 0;
  bool stormed = false;
  // The cumulative rx pause counter at the change.
  uint64_t rx_pause_frames = 0;
  // Pause frames received over `window`, the span judged: the pausing that
  // triggered detection, the quiet or progressing time that restored it.
  uint64_t window_pause_frames = 0;
  absl::Duration window;
  // Why the state ended other than by restoration ("netdev no longer
  // watched", "priority no longer counted"); empty otherwise.
  std::string reason;
  // The rule the change was judged on, and a sentence with its figures:
  // "no transmit progress: ...", "paused 97% of 200ms ...", "NIC storm
  // counter: ...", "no pause frames for 400ms", ...; for kNone the reason.
  PfcStormRule rule = PfcStormRule::kNone;
  std::string why;
  // Over `window`, where the driver counts them: tx_prio<N>_packets sent,
  // rx_prio<N>_pause_duration paused.
  std::optional<uint64_t> window_tx_packets;
  std::optional<absl::Duration> window_paused;
  // kNicStormCounter: how much tx_pause_storm_error_events rose.
  uint64_t storm_error_events = 0;
};

class PfcWatchdog : public prometheus::Collectable {
 public:
  using Callback = std::function<void(const PfcStormTransition&)>;

  // `source` must outlive the watchdog. `on_change` may be empty.
  // `clock` (null: util::RealClock()) times the polling thread's waits and
  // its polls.
  PfcWatchdog(PauseCounterSource* source, PfcWatchdogOptions options, Callback on_change,
              util::Clock* clock = nullptr);
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

  // One poll, as at monotonic time `now` (which must not go backwards
  // between calls): reads every watched netdev that is due (never read, or
  // read a poll interval ago, or an idle interval ago while backed off).
  void PollOnce(absl::Time now);

  // Polls on a thread, with a monotonic clock, when the next netdev is due.
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
  // Whether `netdev` is read at the idle interval now (false when unknown).
  bool BackedOff(const std::string& netdev) const;

  // roced_pfc_storm and roced_pfc_storm_events_total.
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  // One read of a priority.
  struct Sample {
    absl::Time at;
    PauseReading::Priority counters;
    bool paused = false;     // rx_prio<N>_pause rose since the previous sample
    bool progress = false;   // tx_prio<N>_packets rose since the previous sample
    bool after_idle = false; // read after a backed-off wait: no window spans it
  };
  struct PriorityState {
    // Oldest first; the first is the latest at least the longer of the
    // detection and restoration times old.
    std::deque<Sample> history;
    bool stormed = false;
    absl::Time stormed_at;  // the read that declared the storm
    uint64_t storms = 0;
  };
  // Per watched netdev: when it was last read and at which rate.
  struct NetdevPoll {
    absl::Time last_read = absl::InfinitePast();
    absl::Time last_activity = absl::InfinitePast();
    bool backed_off = false;
    std::optional<uint64_t> storm_errors;
    std::optional<uint64_t> storm_warnings;
  };
  using Key = std::pair<std::string, uint32_t>;
  // What a read showed of a priority.
  struct Seen {
    bool baseline = false;  // the read only took a baseline
    bool rx_paused = false;
    bool tx_paused = false;
  };

  // Below, "Locked": mu_ held.
  std::vector<std::string> TakeDueLocked(absl::Time now);
  absl::Time DueLocked(const std::string& netdev) const;
  absl::Duration IdleIntervalLocked() const;
  void ApplyLocked(const std::string& netdev, absl::StatusOr<PauseReading> reading, absl::Time now,
                   std::vector<PfcStormTransition>* changes);
  void DropUncountedLocked(const std::string& netdev, const WatchedNetdev& watched,
                           const std::map<uint32_t, PauseReading::Priority>& counts,
                           std::vector<PfcStormTransition>* changes);
  Seen AddSampleLocked(PriorityState* s, const PauseReading::Priority& counters, absl::Time now,
                       bool after_idle);
  // Storms the priorities a rise of the NIC's storm counter is attributed
  // to; returns them.
  std::vector<Key> NicStormLocked(const std::string& netdev, uint64_t rise,
                                  const std::vector<Key>& pausing, const std::vector<Key>& counted,
                                  std::vector<PfcStormTransition>* changes);
  void DetectLocked(const Key& key, PriorityState* s, std::vector<PfcStormTransition>* changes);
  void RestoreLocked(const Key& key, PriorityState* s, std::vector<PfcStormTransition>* changes);
  void UpdateBackoffLocked(const std::string& netdev, NetdevPoll* poll, bool activity,
                           absl::Time now);
  void Notify(const std::vector<PfcStormTransition>& changes);
  const WatchedNetdev* FindLocked(const std::string& netdev) const;
  // The polling loop: wait until the next netdev is due (never, with
  // nothing to watch), poll.
  absl::Duration UntilNextPoll();
  void PollNow();

  PauseCounterSource* const source_;
  const Callback on_change_;
  util::Clock* const clock_;

  // std::mutex, not absl::Mutex: Debian's Abseil is not built with TSan,
  // so absl::Mutex's ordering is invisible to it (false races in TSan runs).
  // mu_ guards the members below it, up to poll_mu_.
  mutable std::mutex mu_;
  PfcWatchdogOptions options_;
  std::vector<WatchedNetdev> netdevs_;  // sorted by name, one entry each
  std::map<std::string, NetdevPoll> polls_;
  std::map<Key, PriorityState> states_;

  // Serializes polls: a poll reads the source without holding mu_.
  std::mutex poll_mu_;
  // Last: its thread uses everything above.
  util::TriggeredLoop loop_{{"roced-pfcwd", "poll", /*run_first=*/true, clock_},
                            [this] { return UntilNextPoll(); },
                            [this](const std::string&) { PollNow(); }};
};

}  // namespace roced::metrics

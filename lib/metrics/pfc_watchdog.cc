#include "metrics/pfc_watchdog.h"

#include <algorithm>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "util/proto_time.h"

namespace roced::metrics {
namespace {

absl::Duration FromProto(const google::protobuf::Duration& d, absl::Duration fallback) {
  if (d.seconds() == 0 && d.nanos() == 0) return fallback;
  return util::FromProto(d);
}

// Whether a counter went backwards between two reads (a driver reload).
bool Backwards(const std::optional<uint64_t>& before, const std::optional<uint64_t>& now) {
  return before.has_value() && now.has_value() && *now < *before;
}

bool WentBackwards(const PauseReading::Priority& a, const PauseReading::Priority& b) {
  return b.rx_pause < a.rx_pause || Backwards(a.rx_pause_duration_us, b.rx_pause_duration_us) ||
         Backwards(a.tx_pause, b.tx_pause) || Backwards(a.tx_packets, b.tx_packets);
}

bool Rose(const std::optional<uint64_t>& before, const std::optional<uint64_t>& now) {
  return before.has_value() && now.has_value() && *now > *before;
}

std::optional<uint64_t> Delta(const std::optional<uint64_t>& a, const std::optional<uint64_t>& b) {
  if (!a.has_value() || !b.has_value() || *b < *a) return std::nullopt;
  return *b - *a;
}

// The share of (a, b] that rx_prio<N>_pause_duration covered; nullopt
// without the counter.
std::optional<double> PausedShare(const PauseReading::Priority& a, const PauseReading::Priority& b,
                                  absl::Duration window) {
  std::optional<uint64_t> us = Delta(a.rx_pause_duration_us, b.rx_pause_duration_us);
  if (!us.has_value() || window <= absl::ZeroDuration()) return std::nullopt;
  return static_cast<double>(*us) / absl::ToDoubleMicroseconds(window);
}

std::string Percent(double share) {
  return absl::StrCat(static_cast<int64_t>(share * 100 + 0.5), "%");
}

// The largest j in [lo, n) with h[n].at - h[j].at >= length, n the last:
// the start of the shortest window of at least `length` ending now.
template <typename Samples>
std::optional<size_t> WindowStart(const Samples& h, size_t lo, absl::Duration length) {
  const size_t n = h.size() - 1;
  for (size_t j = n; j-- > lo;) {
    if (h[n].at - h[j].at >= length) return j;
  }
  return std::nullopt;
}

// A judgement over a window: whether it holds, on which rule, in words.
struct Verdict {
  bool holds = false;
  PfcStormRule rule = PfcStormRule::kNone;
  std::string why;
};

// Pause frames arrived in every poll of the window (a, b]: did the queue
// make no progress, by the best counter the driver has?
Verdict StalledOver(const PauseReading::Priority& a, const PauseReading::Priority& b,
                    absl::Duration window, uint32_t prio) {
  const std::string w = absl::FormatDuration(window);
  const uint64_t pauses = b.rx_pause - a.rx_pause;
  if (a.tx_packets.has_value() && b.tx_packets.has_value()) {
    return {*b.tx_packets == *a.tx_packets, PfcStormRule::kNoTransmitProgress,
            absl::StrCat("no transmit progress: tx_prio", prio, "_packets +0 over ", w, ", ",
                         pauses, " pause frames received, some in every poll")};
  }
  if (std::optional<double> share = PausedShare(a, b, window)) {
    return {*share >= kStormPausedFraction, PfcStormRule::kPauseDuration,
            absl::StrCat("paused ", Percent(*share), " of ", w, " (rx_prio", prio,
                         "_pause_duration; the driver counts no tx_prio", prio, "_packets), ",
                         pauses, " pause frames, some in every poll")};
  }
  return {true, PfcStormRule::kPausesOnly,
          absl::StrCat(pauses, " pause frames, some in every poll for ", w,
                       ": pauses alone judged, the driver counts neither tx_prio", prio,
                       "_packets nor rx_prio", prio, "_pause_duration")};
}

// While stormed, over the window (a, b]: no pause frame in any poll
// (`quiet`), or progress by the best counter the driver has (`progress`:
// tx_prio<N>_packets rose in every poll)? nullopt: still stormed.
std::optional<Verdict> RecoveredOver(const PauseReading::Priority& a,
                                     const PauseReading::Priority& b, absl::Duration window,
                                     uint32_t prio, bool quiet, bool progress) {
  const std::string w = absl::FormatDuration(window);
  if (quiet) return Verdict{true, PfcStormRule::kQuiet, absl::StrCat("no pause frames for ", w)};
  if (a.tx_packets.has_value() && b.tx_packets.has_value()) {
    if (!progress) return std::nullopt;
    return Verdict{true, PfcStormRule::kTransmitProgress,
                   absl::StrCat("transmit progressing: tx_prio", prio, "_packets +",
                                *b.tx_packets - *a.tx_packets, ", rising in every poll for ", w)};
  }
  std::optional<double> share = PausedShare(a, b, window);
  if (!share.has_value() || *share >= kStormPausedFraction) return std::nullopt;
  return Verdict{true, PfcStormRule::kPauseDurationLow,
                 absl::StrCat("paused only ", Percent(*share), " of ", w, " (rx_prio", prio,
                              "_pause_duration)")};
}

// A storm state that ends because the priority is no longer watched.
PfcStormTransition Ended(const std::pair<std::string, uint32_t>& key, uint64_t rx_pause,
                         std::string reason) {
  PfcStormTransition t;
  t.netdev = key.first;
  t.priority = key.second;
  t.rx_pause_frames = rx_pause;
  t.why = reason;
  t.reason = std::move(reason);
  return t;
}

PfcStormTransition Transition(const std::pair<std::string, uint32_t>& key, bool stormed,
                              const PauseReading::Priority& a, const PauseReading::Priority& b,
                              absl::Duration window, Verdict verdict) {
  PfcStormTransition t;
  t.netdev = key.first;
  t.priority = key.second;
  t.stormed = stormed;
  t.rx_pause_frames = b.rx_pause;
  t.window_pause_frames = b.rx_pause - a.rx_pause;
  t.window = window;
  t.rule = verdict.rule;
  t.why = std::move(verdict.why);
  t.window_tx_packets = Delta(a.tx_packets, b.tx_packets);
  if (std::optional<uint64_t> us = Delta(a.rx_pause_duration_us, b.rx_pause_duration_us)) {
    t.window_paused = absl::Microseconds(static_cast<int64_t>(*us));
  }
  return t;
}

}  // namespace

PauseReading PauseReadingOf(const std::vector<hal::EthtoolStat>& stats) {
  PauseReading out;
  std::map<uint32_t, PauseReading::Priority> all;
  std::set<uint32_t> rx_counted;
  for (const hal::EthtoolStat& s : stats) {
    std::optional<hal::PfcStatName> parsed = hal::ParsePfcStatName(s.name);
    if (!parsed.has_value()) continue;
    PauseReading::Priority* prio = parsed->priority ? &all[*parsed->priority] : nullptr;
    switch (parsed->kind) {
      case hal::PfcStatKind::kRxPause:
        prio->rx_pause = s.value;
        rx_counted.insert(*parsed->priority);
        break;
      case hal::PfcStatKind::kRxPauseDuration: prio->rx_pause_duration_us = s.value; break;
      case hal::PfcStatKind::kTxPause: prio->tx_pause = s.value; break;
      case hal::PfcStatKind::kTxPackets: prio->tx_packets = s.value; break;
      case hal::PfcStatKind::kTxPauseStormError: out.storm_errors = s.value; break;
      case hal::PfcStatKind::kTxPauseStormWarning: out.storm_warnings = s.value; break;
      default: break;
    }
  }
  for (uint32_t p : rx_counted) out.priorities[p] = all[p];
  return out;
}

absl::StatusOr<std::map<uint32_t, uint64_t>> PauseCounterSource::RxPauseFrames(
    const std::string& netdev) {
  absl::StatusOr<PauseReading> reading = Read(netdev);
  if (!reading.ok()) return reading.status();
  std::map<uint32_t, uint64_t> out;
  for (const auto& [priority, counters] : reading->priorities) out[priority] = counters.rx_pause;
  return out;
}

absl::StatusOr<PauseReading> EthtoolPauseCounterSource::Read(const std::string& netdev) {
  absl::StatusOr<std::vector<hal::EthtoolStat>> stats = reader_->ReadStats(netdev);
  if (!stats.ok()) return stats.status();
  return PauseReadingOf(*stats);
}

PfcWatchdogOptions PfcWatchdogOptions::FromConfig(const roced::v1::PfcWatchdogConfig& config) {
  PfcWatchdogOptions o;
  o.poll_interval = FromProto(config.poll_interval(), o.poll_interval);
  o.detection_time = FromProto(config.detection_time(), o.detection_time);
  o.restoration_time = FromProto(config.restoration_time(), o.restoration_time);
  return o;
}

PfcWatchdog::PfcWatchdog(PauseCounterSource* source, PfcWatchdogOptions options,
                         Callback on_change, util::Clock* clock)
    : source_(source),
      on_change_(std::move(on_change)),
      clock_(clock != nullptr ? clock : util::RealClock()),
      options_(options) {}

PfcWatchdog::~PfcWatchdog() { Stop(); }

void PfcWatchdog::SetOptions(PfcWatchdogOptions options) {
  std::lock_guard<std::mutex> lock(mu_);
  options_ = options;
}

PfcWatchdogOptions PfcWatchdog::options() const {
  std::lock_guard<std::mutex> lock(mu_);
  return options_;
}

void PfcWatchdog::SetNetdevs(std::vector<WatchedNetdev> netdevs) {
  std::sort(netdevs.begin(), netdevs.end(),
            [](const WatchedNetdev& a, const WatchedNetdev& b) { return a.netdev < b.netdev; });
  std::vector<WatchedNetdev> merged;
  for (WatchedNetdev& w : netdevs) {
    if (!merged.empty() && merged.back().netdev == w.netdev) {
      merged.back().priorities |= w.priorities;
    } else {
      merged.push_back(std::move(w));
    }
  }
  merged.erase(std::remove_if(merged.begin(), merged.end(),
                              [](const WatchedNetdev& w) { return w.priorities == 0; }),
               merged.end());
  std::vector<PfcStormTransition> changes;
  bool woke = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    woke = netdevs_.empty() && !merged.empty();
    netdevs_ = std::move(merged);
    std::erase_if(polls_, [this](const auto& kv) { return FindLocked(kv.first) == nullptr; });
    for (auto it = states_.begin(); it != states_.end();) {
      if (FindLocked(it->first.first) != nullptr) {
        ++it;
        continue;
      }
      if (it->second.stormed) {
        changes.push_back(Ended(it->first, it->second.history.back().counters.rx_pause,
                                "netdev no longer watched"));
      }
      it = states_.erase(it);
    }
  }
  if (woke) loop_.Trigger("netdevs to watch");
  Notify(changes);
}

void PfcWatchdog::SetNetdevsAllPriorities(const std::vector<std::string>& netdevs) {
  std::vector<WatchedNetdev> all;
  all.reserve(netdevs.size());
  for (const std::string& n : netdevs) all.push_back({n, kAllPriorities});
  SetNetdevs(std::move(all));
}

std::vector<WatchedNetdev> PfcWatchdog::Watched() const {
  std::lock_guard<std::mutex> lock(mu_);
  return netdevs_;
}

const WatchedNetdev* PfcWatchdog::FindLocked(const std::string& netdev) const {
  auto it = std::lower_bound(
      netdevs_.begin(), netdevs_.end(), netdev,
      [](const WatchedNetdev& w, const std::string& name) { return w.netdev < name; });
  return it != netdevs_.end() && it->netdev == netdev ? &*it : nullptr;
}

absl::Duration PfcWatchdog::IdleIntervalLocked() const {
  return std::max(options_.idle_poll_interval, options_.poll_interval);
}

absl::Time PfcWatchdog::DueLocked(const std::string& netdev) const {
  auto it = polls_.find(netdev);
  if (it == polls_.end()) return absl::InfinitePast();
  return it->second.last_read +
         (it->second.backed_off ? IdleIntervalLocked() : options_.poll_interval);
}

std::vector<std::string> PfcWatchdog::TakeDueLocked(absl::Time now) {
  std::vector<std::string> due;
  for (const WatchedNetdev& w : netdevs_) {
    if (DueLocked(w.netdev) > now) continue;
    // A read that fails counts as one: the netdev is not retried at once.
    polls_[w.netdev].last_read = now;
    due.push_back(w.netdev);
  }
  return due;
}

void PfcWatchdog::PollOnce(absl::Time now) {
  std::lock_guard<std::mutex> poll_lock(poll_mu_);
  std::vector<std::string> netdevs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    netdevs = TakeDueLocked(now);
  }
  // The source is read without mu_ held: an ethtool read can take
  // milliseconds on mlx5 (firmware commands) and scrapes must not wait.
  std::vector<absl::StatusOr<PauseReading>> readings;
  readings.reserve(netdevs.size());
  for (const std::string& netdev : netdevs) readings.push_back(source_->Read(netdev));

  std::vector<PfcStormTransition> changes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < netdevs.size(); ++i) {
      ApplyLocked(netdevs[i], std::move(readings[i]), now, &changes);
    }
  }
  Notify(changes);
}

void PfcWatchdog::ApplyLocked(const std::string& netdev, absl::StatusOr<PauseReading> reading,
                              absl::Time now, std::vector<PfcStormTransition>* changes) {
  // Dropped by SetNetdevs() while we were reading.
  const WatchedNetdev* watched = FindLocked(netdev);
  if (watched == nullptr || !reading.ok()) return;
  // Only the watched priorities count.
  std::map<uint32_t, PauseReading::Priority> counts = std::move(reading->priorities);
  std::erase_if(counts, [&](const auto& kv) {
    return kv.first >= 8 || !(watched->priorities & (1u << kv.first));
  });
  DropUncountedLocked(netdev, *watched, counts, changes);
  NetdevPoll& poll = polls_[netdev];
  const uint64_t storm_rise = Rose(poll.storm_errors, reading->storm_errors)
                                  ? *reading->storm_errors - *poll.storm_errors
                                  : 0;
  bool activity = storm_rise > 0 || Rose(poll.storm_warnings, reading->storm_warnings);
  poll.storm_errors = reading->storm_errors;
  poll.storm_warnings = reading->storm_warnings;
  std::vector<Key> pausing, counted;
  for (const auto& [priority, counters] : counts) {
    Key key{netdev, priority};
    Seen seen = AddSampleLocked(&states_[key], counters, now, poll.backed_off);
    if (seen.baseline) continue;
    counted.push_back(key);
    activity = activity || seen.rx_paused;
    if (seen.rx_paused || seen.tx_paused) pausing.push_back(key);
  }
  std::vector<Key> nic_stormed;
  if (storm_rise > 0) nic_stormed = NicStormLocked(netdev, storm_rise, pausing, counted, changes);
  for (const Key& key : counted) {
    if (std::find(nic_stormed.begin(), nic_stormed.end(), key) != nic_stormed.end()) continue;
    PriorityState& s = states_[key];
    s.stormed ? RestoreLocked(key, &s, changes) : DetectLocked(key, &s, changes);
  }
  UpdateBackoffLocked(netdev, &poll, activity, now);
}

void PfcWatchdog::DropUncountedLocked(const std::string& netdev, const WatchedNetdev& watched,
                                      const std::map<uint32_t, PauseReading::Priority>& counts,
                                      std::vector<PfcStormTransition>* changes) {
  for (auto it = states_.lower_bound({netdev, 0});
       it != states_.end() && it->first.first == netdev;) {
    if (counts.count(it->first.second)) {
      ++it;
      continue;
    }
    if (it->second.stormed) {
      changes->push_back(Ended(it->first, it->second.history.back().counters.rx_pause,
                               watched.priorities & (1u << it->first.second)
                                   ? "priority no longer counted"
                                   : "PFC no longer enabled on the priority"));
    }
    it = states_.erase(it);
  }
}

PfcWatchdog::Seen PfcWatchdog::AddSampleLocked(PriorityState* s,
                                               const PauseReading::Priority& counters,
                                               absl::Time now, bool after_idle) {
  Sample sample{now, counters, false, false, after_idle};
  std::deque<Sample>& h = s->history;
  // The first read, or a counter that went backwards (driver reload): a
  // new baseline; nothing can be judged across it.
  if (h.empty() || WentBackwards(h.back().counters, counters)) {
    h.clear();
    h.push_back(sample);
    return {.baseline = true};
  }
  const PauseReading::Priority& before = h.back().counters;
  sample.paused = counters.rx_pause > before.rx_pause;
  sample.progress = Rose(before.tx_packets, counters.tx_packets);
  Seen seen{.rx_paused = sample.paused, .tx_paused = Rose(before.tx_pause, counters.tx_pause)};
  h.push_back(sample);
  // Keep the latest sample old enough to open either window, none older.
  const absl::Time oldest = now - std::max(options_.detection_time, options_.restoration_time);
  while (h.size() >= 2 && h[1].at <= oldest) h.pop_front();
  return seen;
}

std::vector<PfcWatchdog::Key> PfcWatchdog::NicStormLocked(
    const std::string& netdev, uint64_t rise, const std::vector<Key>& pausing,
    const std::vector<Key>& counted, std::vector<PfcStormTransition>* changes) {
  // Port-wide: the priorities that paused in this read, else every one.
  const bool any = !pausing.empty();
  std::vector<Key> stormed;
  for (const Key& key : any ? pausing : counted) {
    PriorityState& s = states_[key];
    if (s.stormed) continue;
    const Sample& a = s.history[s.history.size() - 2];
    const Sample& b = s.history.back();
    Verdict v{true, PfcStormRule::kNicStormCounter,
              absl::StrCat("NIC storm counter: tx_pause_storm_error_events +", rise, " on ",
                           netdev, " (port-wide; ",
                           any ? "the priority sent or received pause frames in that read)"
                               : "no priority paused in that read, so every watched one)")};
    PfcStormTransition t = Transition(key, true, a.counters, b.counters, b.at - a.at, std::move(v));
    t.storm_error_events = rise;
    changes->push_back(std::move(t));
    s.stormed = true;
    s.stormed_at = b.at;
    ++s.storms;
    stormed.push_back(key);
  }
  return stormed;
}

void PfcWatchdog::DetectLocked(const Key& key, PriorityState* s,
                               std::vector<PfcStormTransition>* changes) {
  const std::deque<Sample>& h = s->history;
  // The run of polls up to now that all saw pause frames, read at the poll
  // interval: a read after a backed-off wait may open a window, not be in
  // one (its pauses may have been one burst in a second).
  size_t start = h.size() - 1;
  while (start > 0 && h[start].paused && !h[start].after_idle) --start;
  std::optional<size_t> j = WindowStart(h, start, options_.detection_time);
  if (!j.has_value()) return;
  const Sample& a = h[*j];
  const Sample& b = h.back();
  Verdict v = StalledOver(a.counters, b.counters, b.at - a.at, key.second);
  if (!v.holds) return;
  changes->push_back(Transition(key, true, a.counters, b.counters, b.at - a.at, std::move(v)));
  s->stormed = true;
  s->stormed_at = b.at;
  ++s->storms;
}

void PfcWatchdog::RestoreLocked(const Key& key, PriorityState* s,
                                std::vector<PfcStormTransition>* changes) {
  const std::deque<Sample>& h = s->history;
  // Only what was read since the storm was declared restores it.
  size_t lo = 0;
  while (lo < h.size() && h[lo].at < s->stormed_at) ++lo;
  if (lo >= h.size()) return;
  std::optional<size_t> j = WindowStart(h, lo, options_.restoration_time);
  if (!j.has_value()) return;
  bool quiet = true, progress = true;
  for (size_t k = *j + 1; k < h.size(); ++k) {
    quiet = quiet && !h[k].paused;
    progress = progress && h[k].progress;
  }
  const Sample& a = h[*j];
  const Sample& b = h.back();
  std::optional<Verdict> v =
      RecoveredOver(a.counters, b.counters, b.at - a.at, key.second, quiet, progress);
  if (!v.has_value()) return;
  changes->push_back(Transition(key, false, a.counters, b.counters, b.at - a.at, *std::move(v)));
  s->stormed = false;
}

void PfcWatchdog::UpdateBackoffLocked(const std::string& netdev, NetdevPoll* poll, bool activity,
                                      absl::Time now) {
  if (activity || poll->last_activity == absl::InfinitePast()) {
    poll->backed_off = false;
    poll->last_activity = now;
    return;
  }
  if (poll->backed_off || now - poll->last_activity < IdleIntervalLocked()) return;
  for (auto it = states_.lower_bound({netdev, 0});
       it != states_.end() && it->first.first == netdev; ++it) {
    if (it->second.stormed) return;  // restoration is judged at the poll interval
  }
  poll->backed_off = true;
}

void PfcWatchdog::Notify(const std::vector<PfcStormTransition>& changes) {
  if (!on_change_) return;
  for (const PfcStormTransition& c : changes) on_change_(c);
}

void PfcWatchdog::Start() { loop_.Start(); }

void PfcWatchdog::Stop() { loop_.Stop(); }

absl::Duration PfcWatchdog::UntilNextPoll() {
  // Until the first netdev is due, so each stays its interval apart even
  // when a read took a while.
  std::lock_guard<std::mutex> lock(mu_);
  if (netdevs_.empty()) return absl::InfiniteDuration();
  absl::Time next = absl::InfiniteFuture();
  for (const WatchedNetdev& w : netdevs_) next = std::min(next, DueLocked(w.netdev));
  return next - clock_->Monotonic();
}

void PfcWatchdog::PollNow() { PollOnce(clock_->Monotonic()); }

std::vector<PfcWatchdog::PriorityStatus> PfcWatchdog::Status() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PriorityStatus> out;
  out.reserve(states_.size());
  for (const auto& [key, s] : states_) {
    out.push_back({key.first, key.second, s.stormed, s.storms, s.history.back().counters.rx_pause});
  }
  return out;
}

bool PfcWatchdog::BackedOff(const std::string& netdev) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = polls_.find(netdev);
  return it != polls_.end() && it->second.backed_off;
}

std::vector<prometheus::MetricFamily> PfcWatchdog::Collect() const {
  std::vector<PriorityStatus> status = Status();
  if (status.empty()) return {};
  prometheus::MetricFamily storm{
      "roced_pfc_storm",
      "1 while the PFC watchdog considers the priority stormed: pause frames received in every "
      "poll for the detection time while the queue made no progress (tx_prio<N>_packets flat; "
      "where the driver lacks it, rx_prio<N>_pause_duration covering >= 90% of the time; where "
      "it lacks both, the pauses alone), or at once when the NIC's "
      "tx_pause_storm_error_events rose; 0 again after the restoration time without pause "
      "frames or with the queue progressing.",
      prometheus::MetricType::Gauge,
      {}};
  prometheus::MetricFamily events{"roced_pfc_storm_events_total",
                                  "PFC storms the watchdog detected on the priority.",
                                  prometheus::MetricType::Counter,
                                  {}};
  for (const PriorityStatus& s : status) {
    std::vector<prometheus::ClientMetric::Label> labels = {{"netdev", s.netdev},
                                                           {"priority", absl::StrCat(s.priority)}};
    prometheus::ClientMetric g;
    g.label = labels;
    g.gauge.value = s.stormed ? 1 : 0;
    storm.metric.push_back(std::move(g));
    prometheus::ClientMetric c;
    c.label = std::move(labels);
    c.counter.value = static_cast<double>(s.storms);
    events.metric.push_back(std::move(c));
  }
  return {std::move(storm), std::move(events)};
}

}  // namespace roced::metrics

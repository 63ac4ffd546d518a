#include "metrics/pfc_watchdog.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "absl/strings/str_cat.h"
#include "util/proto_time.h"

namespace roced::metrics {
namespace {

absl::Time MonotonicNow() {
  return absl::UnixEpoch() + absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

absl::Duration FromProto(const google::protobuf::Duration& d, absl::Duration fallback) {
  if (d.seconds() == 0 && d.nanos() == 0) return fallback;
  return util::FromProto(d);
}

}  // namespace

absl::StatusOr<std::map<uint32_t, uint64_t>> EthtoolPauseCounterSource::RxPauseFrames(
    const std::string& netdev) {
  absl::StatusOr<std::vector<hal::EthtoolStat>> stats = reader_->ReadStats(netdev);
  if (!stats.ok()) return stats.status();
  std::map<uint32_t, uint64_t> out;
  for (const hal::EthtoolStat& s : *stats) {
    std::optional<hal::PfcStatName> parsed = hal::ParsePfcStatName(s.name);
    if (parsed.has_value() && parsed->kind == hal::PfcStatKind::kRxPause) {
      out[*parsed->priority] = s.value;
    }
  }
  return out;
}

PfcWatchdogOptions PfcWatchdogOptions::FromConfig(const roced::v1::PfcWatchdogConfig& config) {
  PfcWatchdogOptions o;
  o.poll_interval = FromProto(config.poll_interval(), o.poll_interval);
  o.detection_time = FromProto(config.detection_time(), o.detection_time);
  o.restoration_time = FromProto(config.restoration_time(), o.restoration_time);
  return o;
}

PfcWatchdog::PfcWatchdog(PauseCounterSource* source, PfcWatchdogOptions options,
                         Callback on_change)
    : source_(source), on_change_(std::move(on_change)), options_(options) {}

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
    for (auto it = states_.begin(); it != states_.end();) {
      if (FindLocked(it->first.first) != nullptr) {
        ++it;
        continue;
      }
      if (it->second.stormed) {
        changes.push_back({it->first.first, it->first.second, false, it->second.last, 0,
                           absl::ZeroDuration(), "netdev no longer watched"});
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

void PfcWatchdog::Update(const Key& key, uint64_t value, absl::Time now, PriorityState* s,
                         std::vector<PfcStormTransition>* changes) {
  // A counter that went backwards was reset (driver reload): what it shows
  // now is what arrived since.
  const uint64_t delta = value >= s->last ? value - s->last : value;
  if (delta > 0) {
    s->quiet_since.reset();
    if (!s->pausing_since.has_value()) {
      // Pauses arrived some time after the previous poll; counting from
      // that poll is the earliest they can have started.
      s->pausing_since = s->last_poll;
      s->count_at_pausing_start = s->last;
    }
    const absl::Duration pausing = now - *s->pausing_since;
    if (!s->stormed && pausing >= options_.detection_time) {
      s->stormed = true;
      ++s->storms;
      changes->push_back({key.first, key.second, true, value,
                          value >= s->count_at_pausing_start ? value - s->count_at_pausing_start
                                                             : value,
                          pausing, ""});
    }
  } else {
    s->pausing_since.reset();
    if (s->stormed) {
      if (!s->quiet_since.has_value()) s->quiet_since = s->last_poll;
      const absl::Duration quiet = now - *s->quiet_since;
      if (quiet >= options_.restoration_time) {
        s->stormed = false;
        s->quiet_since.reset();
        changes->push_back({key.first, key.second, false, value, 0, quiet, ""});
      }
    }
  }
  s->last = value;
  s->last_poll = now;
}

void PfcWatchdog::PollOnce(absl::Time now) {
  std::lock_guard<std::mutex> poll_lock(poll_mu_);
  std::vector<std::string> netdevs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const WatchedNetdev& w : netdevs_) netdevs.push_back(w.netdev);
  }
  // The source is read without mu_ held: an ethtool read can take
  // milliseconds on mlx5 (a firmware query) and scrapes must not wait.
  std::vector<absl::StatusOr<std::map<uint32_t, uint64_t>>> readings;
  readings.reserve(netdevs.size());
  for (const std::string& netdev : netdevs) readings.push_back(source_->RxPauseFrames(netdev));

  std::vector<PfcStormTransition> changes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < netdevs.size(); ++i) {
      const std::string& netdev = netdevs[i];
      // Dropped by SetNetdevs() while we were reading.
      const WatchedNetdev* watched = FindLocked(netdev);
      if (watched == nullptr) continue;
      if (!readings[i].ok()) continue;
      // Only the watched priorities count.
      std::map<uint32_t, uint64_t> counts = *std::move(readings[i]);
      for (auto c = counts.begin(); c != counts.end();) {
        c = c->first < 8 && (watched->priorities & (1u << c->first)) ? std::next(c)
                                                                     : counts.erase(c);
      }
      for (auto it = states_.lower_bound({netdev, 0});
           it != states_.end() && it->first.first == netdev;) {
        if (counts.count(it->first.second)) {
          ++it;
          continue;
        }
        if (it->second.stormed) {
          changes.push_back({netdev, it->first.second, false, it->second.last, 0,
                             absl::ZeroDuration(),
                             watched->priorities & (1u << it->first.second)
                                 ? "priority no longer counted"
                                 : "PFC no longer enabled on the priority"});
        }
        it = states_.erase(it);
      }
      for (const auto& [priority, value] : counts) {
        Key key{netdev, priority};
        auto [it, added] = states_.try_emplace(key);
        if (added) {
          it->second.last = value;
          it->second.last_poll = now;
          continue;
        }
        Update(key, value, now, &it->second, &changes);
      }
    }
  }
  Notify(changes);
}

void PfcWatchdog::Notify(const std::vector<PfcStormTransition>& changes) {
  if (!on_change_) return;
  for (const PfcStormTransition& c : changes) on_change_(c);
}

void PfcWatchdog::Start() { loop_.Start(); }

void PfcWatchdog::Stop() { loop_.Stop(); }

absl::Duration PfcWatchdog::UntilNextPoll() {
  // The rest of the interval, so polls stay interval apart even when a
  // read took a while.
  std::lock_guard<std::mutex> lock(mu_);
  if (netdevs_.empty()) return absl::InfiniteDuration();
  return options_.poll_interval - (MonotonicNow() - last_poll_);
}

void PfcWatchdog::PollNow() {
  last_poll_ = MonotonicNow();
  PollOnce(last_poll_);
}

std::vector<PfcWatchdog::PriorityStatus> PfcWatchdog::Status() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PriorityStatus> out;
  out.reserve(states_.size());
  for (const auto& [key, s] : states_) {
    out.push_back({key.first, key.second, s.stormed, s.storms, s.last});
  }
  return out;
}

std::vector<prometheus::MetricFamily> PfcWatchdog::Collect() const {
  std::vector<PriorityStatus> status = Status();
  if (status.empty()) return {};
  prometheus::MetricFamily storm{
      "roced_pfc_storm",
      "1 while the PFC watchdog considers the priority stormed: it has received pause frames "
      "continuously for the detection time and not yet been quiet for the restoration time.",
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

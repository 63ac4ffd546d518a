#include "agent/runtimes/counters_runtime.h"

#include <sys/resource.h>

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "hal/carrier_changes.h"
#include "util/log.h"
#include "util/proto_time.h"

namespace roced::agent {
namespace {

constexpr rlim_t kMaxNoFile = 65536;

void RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  rlim_t want = std::min<rlim_t>(limit.rlim_max, kMaxNoFile);
  if (limit.rlim_cur >= want) return;
  limit.rlim_cur = want;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    LOG_WARNING << "cannot raise the open-file limit to " << want
                << "; counters beyond the descriptor budget are opened on each read";
  }
}

std::string RateKey(const roced::v1::CounterSet& set, const roced::v1::Counter& c) {
  return absl::StrCat(set.device(), "\x1f", set.port(), "\x1f", set.netdev(), "\x1f",
                      set.source(), "\x1f", c.source_name(), "\x1f", c.name());
}

}  // namespace

CountersRuntime::CountersRuntime(Agent* agent, CountersRuntimeOptions options)
    : agent_(agent),
      paths_(options.paths),
      clock_(options.clock != nullptr ? options.clock : util::RealClock()),
      refresh_interval_(options.refresh_interval),
      flaps_(options.link_flaps != nullptr ? *options.link_flaps : own_flaps_) {
  RaiseOpenFileLimit();
  files_ = std::make_unique<hal::CounterFiles>(options.paths, hal::CounterFiles::Options());
  netdev_stats_ = options.netdev_stats;
  if (netdev_stats_ != nullptr) {
    pause_source_ = std::make_unique<metrics::EthtoolPauseCounterSource>(netdev_stats_);
  }
  collector_ = std::make_shared<metrics::CounterCollector>(files_.get(), netdev_stats_,
                                                           [this] { return Ports(); });
  watchdog_ = std::make_shared<metrics::PfcWatchdog>(
      pause_source_.get(), metrics::PfcWatchdogOptions(),
      [this](const metrics::PfcStormTransition& change) { OnStormChange(change); }, clock_);
  dcb_ = options.dcb;
  if (options.dcb != nullptr) {
    dcb_collector_ = std::make_shared<metrics::DcbCollector>(options.dcb, [this] {
      std::vector<std::string> netdevs;
      for (const auto& p : Ports()) netdevs.push_back(p.netdev);
      return netdevs;
    });
  }
}

CountersRuntime::~CountersRuntime() { Stop(); }

std::vector<std::shared_ptr<prometheus::Collectable>> CountersRuntime::Collectables() const {
  std::vector<std::shared_ptr<prometheus::Collectable>> out = {collector_, watchdog_};
  if (dcb_collector_) out.push_back(dcb_collector_);
  return out;
}

std::vector<metrics::PortNetdev> CountersRuntime::Ports() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ports_;
}

void CountersRuntime::Refresh() {
  roced::v1::NodeState state = agent_->State();
  std::vector<metrics::PortNetdev> ports = metrics::PortNetdevs(state.devices());
  bool devices_changed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto devices = [](const std::vector<metrics::PortNetdev>& v) {
      std::set<std::string> d;
      for (const auto& p : v) d.insert(p.device);
      return d;
    };
    devices_changed = started_ && devices(ports) != devices(ports_);
    ports_ = ports;
  }
  // A device that came back (or went) has its counter files opened (or
  // closed) now, not at the files' next periodic rescan, which only a read
  // (a scrape, GetCounters) makes. So does a device the state lists but the
  // files do not hold: one whose files answered "gone" while it was being
  // removed and re-added between two discovery passes (the device set did
  // not change), or whose counter directories appeared after it did.
  bool files_missing = false;
  if (!devices_changed) {
    const std::set<std::string> held = files_->Devices();
    for (const metrics::PortNetdev& p : ports) files_missing = files_missing || !held.count(p.device);
  }
  if (devices_changed || files_missing) files_->Rescan();
  SampleLinks(ports);
  SampleCongestionIfDue(ports);
  if (netdev_stats_ == nullptr) return;
  watchdog_->SetNetdevs(WatchedNetdevs(ports));
  // Without an accepted config the defaults stand (100/200/400 ms).
  metrics::PfcWatchdogOptions options =
      metrics::PfcWatchdogOptions::FromConfig(state.config().desired().pfc_watchdog());
  if (!(options == watchdog_->options())) {
    LOG_INFO << "PFC watchdog: poll every " << absl::FormatDuration(options.poll_interval)
             << ", storm after " << absl::FormatDuration(options.detection_time)
             << " of pausing, restored after " << absl::FormatDuration(options.restoration_time)
             << " without";
    watchdog_->SetOptions(options);
  }
}

std::vector<metrics::WatchedNetdev> CountersRuntime::WatchedNetdevs(
    const std::vector<metrics::PortNetdev>& ports) {
  std::vector<metrics::WatchedNetdev> out;
  std::set<std::string> seen;
  for (const metrics::PortNetdev& p : ports) {
    if (p.netdev.empty() || !seen.insert(p.netdev).second) continue;
    // The priorities with PFC on, where DCB netlink says; none: nothing can
    // storm. A netdev whose PFC state cannot be read is watched on whatever
    // its driver counts, if it counts per-priority pause frames at all
    // (asked once while it stays).
    if (dcb_ != nullptr) {
      absl::StatusOr<hal::DcbReading> r = dcb_->Get(p.netdev);
      if (r.ok() && r->pfc.has_value()) {
        if (r->pfc->pfc_en != 0) out.push_back({p.netdev, r->pfc->pfc_en});
        continue;
      }
    }
    auto [it, added] = counts_pauses_.try_emplace(p.netdev, false);
    if (added) {
      absl::StatusOr<std::map<uint32_t, uint64_t>> counts = pause_source_->RxPauseFrames(p.netdev);
      it->second = counts.ok() && !counts->empty();
    }
    if (it->second) out.push_back({p.netdev, metrics::kAllPriorities});
  }
  std::erase_if(counts_pauses_, [&](const auto& kv) { return !seen.count(kv.first); });
  return out;
}

void CountersRuntime::SampleLinks(const std::vector<metrics::PortNetdev>& ports) {
  std::lock_guard<std::mutex> lock(samples_mu_);
  std::set<std::string> netdevs;
  // The flap history is shared with the reconciler, which notes its own
  // toggles on the system clock (NodeBackends): the same clock here.
  const absl::Time now = absl::Now();
  for (const metrics::PortNetdev& p : ports) {
    if (p.netdev.empty() || !netdevs.insert(p.netdev).second) continue;
    // Absent (a fixture tree, a netdev going away): this reading only.
    if (absl::StatusOr<uint64_t> n = hal::ReadCarrierChanges(paths_, p.netdev); n.ok()) {
      flaps_.Observe(p.netdev, *n, now);
    }
  }
  flaps_.Retain(netdevs);
}

std::vector<metrics::LinkFlaps> CountersRuntime::LinkFlaps() {
  SampleLinks(Ports());
  return flaps_.Flaps(absl::Now());
}

std::vector<roced::v1::CounterSet> CountersRuntime::ReadSets(const std::vector<metrics::PortNetdev>& ports) {
  std::vector<metrics::NetdevStats> stats;
  if (netdev_stats_ != nullptr) stats = metrics::ReadNetdevStats(netdev_stats_, ports);
  return metrics::BuildCounterSets(files_->Read(), ports, stats);
}

void CountersRuntime::SampleCongestionIfDue(const std::vector<metrics::PortNetdev>& ports) {
  const absl::Time now = clock_->Monotonic();
  if (!congestion_.Due(now)) return;
  congestion_.Offer(metrics::CongestionSampleOf(now, ReadSets(ports)));
}

metrics::CongestionWindow CountersRuntime::CongestionWindowNow() {
  const absl::Time now = clock_->Monotonic();
  return congestion_.WindowTo(metrics::CongestionSampleOf(now, ReadSets(Ports())));
}

void CountersRuntime::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (started_) return;
    started_ = true;
  }
  Refresh();
  if (netdev_stats_ != nullptr) watchdog_->Start();
  state_listener_ = agent_->AddStateListener([this] { refresh_.Trigger("state changed"); });
  refresh_.Start();
}

void CountersRuntime::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    started_ = false;
  }
  if (state_listener_ != 0) agent_->RemoveStateListener(state_listener_);
  state_listener_ = 0;
  refresh_.Stop();
  watchdog_->Stop();
}

void CountersRuntime::OnStormChange(const metrics::PfcStormTransition& c) {
  const std::string counter = absl::StrCat("rx_prio", c.priority, "_pause=", c.rx_pause_frames);
  if (c.stormed) {
    LOG_WARNING << "PFC storm on " << c.netdev << " priority " << c.priority << ": " << c.why << " (" << counter
                << ")";
  } else if (!c.reason.empty()) {
    LOG_INFO << "PFC storm state on " << c.netdev << " priority " << c.priority
             << " cleared: " << c.reason << " (" << counter << ")";
  } else {
    LOG_INFO << "PFC storm on " << c.netdev << " priority " << c.priority << " over: " << c.why << " ("
             << counter << ")";
  }
  roced::v1::StateEvent event;
  roced::v1::PfcStormEvent* storm = event.mutable_pfc_storm();
  storm->set_netdev(c.netdev);
  storm->set_priority(c.priority);
  storm->set_stormed(c.stormed);
  storm->set_rx_pause_frames(c.rx_pause_frames);
  agent_->PublishEvent(std::move(event));
}

absl::StatusOr<roced::v1::GetCountersResponse> CountersRuntime::GetCounters(
    const roced::v1::GetCountersRequest& request) {
  std::vector<metrics::PortNetdev> ports = Ports();
  std::set<std::string> devices, netdevs;
  for (const metrics::PortNetdev& p : ports) {
    devices.insert(p.device);
    if (!p.netdev.empty()) netdevs.insert(p.netdev);
  }
  if (!request.device().empty() && !devices.count(request.device())) {
    return absl::NotFoundError(absl::StrCat("no RDMA device '", request.device(),
                                            "' on this node (devices: ",
                                            absl::StrJoin(devices, ", "), ")"));
  }
  if (!request.netdev().empty() && !netdevs.count(request.netdev())) {
    return absl::NotFoundError(absl::StrCat("no RoCE netdev '", request.netdev(),
                                            "' on this node (netdevs: ",
                                            absl::StrJoin(netdevs, ", "), ")"));
  }
  std::vector<roced::v1::CounterSet> sets = ReadSets(ports);

  roced::v1::GetCountersResponse response;
  *response.mutable_at() = util::ToProto(clock_->Now());
  const absl::Time now = clock_->Monotonic();
  std::lock_guard<std::mutex> lock(rates_mu_);
  std::map<std::string, Sample> next;
  for (roced::v1::CounterSet& set : sets) {
    // Rates are computed over every set, filtered or not, so a filtered
    // call does not leave the others' previous samples stale.
    for (roced::v1::Counter& c : *set.mutable_counters()) {
      std::string key = RateKey(set, c);
      auto prev = previous_.find(key);
      if (prev != previous_.end() && now > prev->second.at && c.value() >= prev->second.value) {
        c.set_rate(static_cast<double>(c.value() - prev->second.value) /
                   absl::ToDoubleSeconds(now - prev->second.at));
      }
      next[std::move(key)] = {c.value(), now};
    }
    if (!request.device().empty() && set.device() != request.device()) continue;
    if (!request.netdev().empty() && set.netdev() != request.netdev()) continue;
    *response.add_sets() = std::move(set);
  }
  previous_ = std::move(next);
  return response;
}

}  // namespace roced::agent

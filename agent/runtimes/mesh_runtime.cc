#include "agent/runtimes/mesh_runtime.h"

#include <poll.h>
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"
#include "agent/core/agent.h"
#include "agent/core/describe.h"
#include "agent/runtimes/lldp_runtime.h"
#include "hal/pressure.h"
#include "mesh/inventory.h"
#include "mesh/probe_packet.h"
#include "mesh/slowdown.h"
#include "model/config_limits.h"
#include "probe/gid.h"
#include "util/log.h"
#include "util/proto_time.h"

namespace roced::agent {
namespace {

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// How long the probe loop sleeps at most between turns: Stop is seen
// within it, and a port that is down is retried after it.
constexpr absl::Duration kMaxTurn = absl::Milliseconds(200);
constexpr absl::Duration kPortRetry = absl::Seconds(5);
constexpr size_t kSendsPerTurn = 256;

std::string Label(uint32_t v) { return absl::StrCat(v); }

void FillSeries(const mesh::SeriesWindow& w, roced::v1::MeshSeries* s) {
  s->set_peer(w.peer);
  s->set_size_bytes(w.size_bytes);
  s->set_dscp(w.dscp);
  s->set_sent(w.sent);
  s->set_lost(w.lost);
  s->set_loss_ratio(w.loss_ratio);
  if (w.p50_ns >= 0) *s->mutable_rtt_p50() = util::ToProto(absl::Nanoseconds(w.p50_ns));
  if (w.p99_ns >= 0) *s->mutable_rtt_p99() = util::ToProto(absl::Nanoseconds(w.p99_ns));
  for (uint32_t port : w.lost_flow_labels) s->add_lost_source_ports(port);
  s->set_slow(w.slow);
  s->set_hist_sent(w.hist_sent);
  s->set_hist_lost(w.hist_lost);
  s->set_hist_slow(w.hist_slow);
  if (w.hold_p99_ns >= 0) *s->mutable_responder_hold_p99() = util::ToProto(absl::Nanoseconds(w.hold_p99_ns));
}

// The scope as ListMeshResults and /metrics name it.
const char* ScopeName(mesh::PeerScope scope) {
  switch (scope) {
    case mesh::PeerScope::kSameTor:
      return "same_tor";
    case mesh::PeerScope::kSamePod:
      return "same_pod";
    case mesh::PeerScope::kOtherPod:
      return "other_pod";
  }
  return "unknown";
}

}  // namespace

absl::StatusOr<std::vector<uint32_t>> ParseMeshDscps(const std::string& text) {
  std::vector<uint32_t> out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    uint32_t v = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &v) || v > model::config_limits::kMaxDscp) {
      return absl::InvalidArgumentError(absl::StrCat("--mesh-dscps: \"", part, "\" is not a DSCP (0..",
                                                     model::config_limits::kMaxDscp, ", comma-separated)"));
    }
    if (std::find(out.begin(), out.end(), v) != out.end()) {
      return absl::InvalidArgumentError(absl::StrCat("--mesh-dscps: DSCP ", v, " is listed twice"));
    }
    out.push_back(v);
  }
  if (out.size() > mesh::kMaxMeshClasses) {
    return absl::InvalidArgumentError(
        absl::StrCat("--mesh-dscps: ", out.size(), " DSCPs; at most ", mesh::kMaxMeshClasses));
  }
  return out;
}

MeshRuntime::MeshRuntime(Agent* agent, LldpRuntime* lldp, MeshRuntimeOptions options)
    : agent_(agent),
      lldp_(lldp),
      options_(std::move(options)),
      loop_lag_(options_.prober.results.window, options_.prober.results.slots),
      membership_({.inventory_path = options_.inventory_path,
                   .dns_name = options_.dns_name,
                   .dns_port = options_.dns_port,
                   .resolve = options_.resolve,
                   .describe = options_.describe,
                   .peer_credentials = options_.peer_credentials,
                   .clock = options_.clock}) {
  if (options_.clock == nullptr) options_.clock = util::RealClock();
  if (options_.registry == nullptr || !enabled()) return;
  families_ = metrics::MeshFamilies::Register(*options_.registry);
}

void MeshRuntime::SetInfoLocked(const mesh::Member& self) {
  if (families_.info == nullptr) return;
  const std::map<std::string, std::string> labels = {{"node", self.name}, {"tor", self.tor}, {"pod", self.pod}};
  prometheus::Gauge* next = &families_.info->Add(labels);
  if (info_series_ != nullptr && info_series_ != next) families_.info->Remove(info_series_);
  info_series_ = next;
  info_series_->Set(1);
}

MeshRuntime::~MeshRuntime() { Stop(); }

void MeshRuntime::Start() {
  if (!enabled() || probe_thread_.joinable()) return;
  // Lost probes' source ports, as the port's driver sets them (read on
  // the probe loop's thread, which owns the ports). The rail is the one a
  // peer with as many rails as this node was probed on.
  options_.prober.source_port = [this](uint32_t index) -> uint32_t {
    if (ports_.empty()) return index;
    const size_t qps = ports_[0]->qps();
    const probe::UdPort& port = *ports_[(index / qps) % ports_.size()];
    return port.SourcePort(index % port.qps(), probe::MeshFlowLabel(index));
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    absl::StatusOr<mesh::MeshProber> prober = mesh::MeshProber::Create(agent_->State().hostname(), options_.prober);
    if (!prober.ok()) {
      prober_error_ = std::string(prober.status().message());
      LOG_ERROR << "mesh: " << prober_error_;
      return;
    }
    prober_.emplace(*std::move(prober));
    started_ns_ = MonotonicNs();
  }
  stop_ = false;
  members_thread_ = std::thread([this] { MembersLoop(); });
  probe_thread_ = std::thread([this] { ProbeLoop(); });
  LOG_INFO << "mesh: on, membership from " << membership_.Source();
}

void MeshRuntime::Stop() {
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (members_thread_.joinable()) members_thread_.join();
  if (probe_thread_.joinable()) probe_thread_.join();
  ports_.clear();
}

bool MeshRuntime::Sleep(absl::Duration d) {
  std::unique_lock<std::mutex> lock(wake_mu_);
  options_.clock->WaitFor(lock, wake_, d, [this] { return stop_.load(); });
  return !stop_;
}

void MeshRuntime::MembersLoop() {
  pthread_setname_np(pthread_self(), "roced-mesh-mem");
  do {
    RefreshMembers();
    DescribePeers();
    const std::optional<double> pressure = CpuPressure();
    UpdateSlowdown(pressure);
    UpdateHostBusy(pressure);
  } while (Sleep(std::min(options_.refresh, mesh::kDescribeRetry)));
}

void MeshRuntime::RefreshMembers() {
  absl::StatusOr<std::vector<mesh::Member>> read = membership_.Read(stop_);
  std::lock_guard<std::mutex> lock(mu_);
  inventory_error_ = read.ok() ? "" : std::string(read.status().message());
  if (!read.ok()) {
    LOG_WARNING << "mesh: " << inventory_error_ << " (the last good membership stays)";
    if (membership_.last().empty()) return;
  }
  std::vector<mesh::Member> members = membership_.last();
  const roced::v1::DescribeResponse me =
      DescribeNode(agent_->State(), lldp_ != nullptr ? lldp_->Neighbors() : std::vector<roced::v1::LldpNeighbor>{});
  absl::StatusOr<mesh::Member> self = mesh::PlaceSelf(&members, me.node_name(), me.tor(), me.pod());
  if (!self.ok()) {
    inventory_error_ = std::string(self.status().message());
    return;
  }
  self_ = *std::move(self);
  SetInfoLocked(self_);
  absl::StatusOr<mesh::Pinglist> list = mesh::ComputePinglist(self_.name, members, options_.pinglist);
  if (!list.ok()) {
    inventory_error_ = std::string(list.status().message());
    return;
  }
  std::map<std::string, PeerInfo> next;
  std::map<std::string, const mesh::Member*> by_name;
  for (const mesh::Member& m : members) by_name.emplace(m.name, &m);
  for (const mesh::PinglistEntry& e : list->entries) {
    PeerInfo info;
    if (auto old = peers_.find(e.peer); old != peers_.end()) info = old->second;
    info.member = *by_name[e.peer];
    info.scope = e.scope;
    next[e.peer] = std::move(info);
  }
  peers_ = std::move(next);
  prober_->SetPinglist(*list, MonotonicNs());
  for (const auto& [name, info] : peers_) prober_->SetTarget(name, info.target);
  PruneSeries(peers_);
  UpdatePeerGauges();
}

void MeshRuntime::DescribePeers() {
  std::vector<std::pair<std::string, std::string>> due;  // name, address
  const absl::Time now = options_.clock->Now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A described peer that stopped answering altogether may answer on a
    // new QPN (its agent restarted, its device came back): ask again now.
    for (const std::string& name : prober_->PeersLosingAll(kLostBeforeRedescribe)) {
      auto it = peers_.find(name);
      if (it != peers_.end() && it->second.target.has_value()) it->second.next_describe = now;
    }
    for (const auto& [name, info] : peers_) {
      if (info.next_describe <= now) due.emplace_back(name, info.member.address);
    }
  }
  for (const auto& [name, address] : due) {
    if (stop_) return;
    absl::StatusOr<std::vector<mesh::MeshTarget>> target = membership_.Responders(name, address);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = peers_.find(name);
    if (it == peers_.end()) continue;
    PeerInfo& info = it->second;
    info.target = target.ok() ? std::optional<mesh::MeshTarget>(target->front()) : std::nullopt;
    info.rails = target.ok() ? *target : std::vector<mesh::MeshTarget>{};
    info.error = target.ok() ? "" : std::string(target.status().message());
    info.next_describe = options_.clock->Now() + (target.ok() ? mesh::kDescribeTtl : mesh::kDescribeRetry);
    prober_->SetTarget(name, info.target);
  }
}

std::optional<double> MeshRuntime::CpuPressure() const {
  hal::Paths paths;
  paths.procfs = options_.procfs_root;
  return hal::CpuPressureAvg10(paths);
}

void MeshRuntime::UpdateSlowdown(std::optional<double> pressure) {
  if (!pressure.has_value()) return;
  std::lock_guard<std::mutex> lock(mu_);
  const double before = prober_->schedule().slowdown();
  const double after = mesh::NextSlowdown(before, *pressure);
  if (after == before) return;
  prober_->SetSlowdown(after);
  LOG_INFO << "mesh: CPU pressure " << *pressure << "%: rates divided by " << after;
  if (families_.slowdown != nullptr) families_.slowdown->Set(after);
}

mesh::HostState MeshRuntime::HostStateLocked(int64_t now_ns, std::optional<double> pressure) const {
  return mesh::HostState{.cpu_pressure = pressure,
                         .max_loop_lag = loop_lag_.Max(now_ns),
                         .uptime = absl::Nanoseconds(now_ns - started_ns_),
                         .window = options_.prober.results.window};
}

void MeshRuntime::UpdateHostBusy(std::optional<double> pressure) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string reason = mesh::HostBusyReason(HostStateLocked(MonotonicNs(), pressure));
  if (families_.host_busy != nullptr) families_.host_busy->Set(reason.empty() ? 0 : 1);
  if (reason.empty() == !host_busy_) return;
  host_busy_ = !reason.empty();
  if (host_busy_) {
    LOG_WARNING << "mesh: this host is busy (" << reason << "): its probes say more about it than the network";
  } else {
    LOG_INFO << "mesh: this host is no longer busy";
  }
}

void MeshRuntime::UpdatePeerGauges() {
  if (families_.peers == nullptr) return;
  std::map<mesh::PeerScope, double> counts = {
      {mesh::PeerScope::kSameTor, 0}, {mesh::PeerScope::kSamePod, 0}, {mesh::PeerScope::kOtherPod, 0}};
  for (const auto& [name, info] : peers_) counts[info.scope] += 1;
  for (const auto& [scope, n] : counts) families_.peers->Add({{"scope", ScopeName(scope)}}).Set(n);
}

bool MeshRuntime::OpenPorts() {
  const roced::v1::DescribeResponse me = DescribeNode(agent_->State(), {});
  std::vector<std::string> failures;
  std::vector<PortInfo> opened;
  if (me.endpoints().empty()) failures.push_back("no RoCE port with a RoCE v2 IPv4 GID");
  for (const roced::v1::MeshEndpoint& e : me.endpoints()) {
    if (ports_.size() >= kMaxMeshPorts) break;
    probe::UdPortOptions o;
    o.device = e.device();
    o.port = e.port();
    o.netdev = e.netdev();
    o.ipv4 = e.ip_address();
    o.max_message = std::clamp<uint32_t>(e.active_mtu(), 1024, probe::kMaxUdMessage);
    absl::StatusOr<std::unique_ptr<probe::UdPort>> port = probe::UdPort::Open(o);
    if (!port.ok()) {
      failures.push_back(absl::StrCat(o.device, "/", o.port, ": ", port.status().message()));
      continue;
    }
    const probe::UdPort& p = **port;
    std::string source_ports;
    for (size_t i = 0; i < p.qps(); ++i) {
      absl::StrAppend(&source_ports, i == 0 ? "" : " ", p.SourcePort(i, probe::MeshFlowLabel(i)));
    }
    LOG_INFO << "mesh: responder on " << o.device << "/" << o.port << " (" << o.netdev << "), UD QPN " << p.qpn(0)
             << ", " << p.qps() << " QPs, UDP source ports " << source_ports << ", "
             << (p.nic_timestamps() ? "NIC" : "host") << " timestamps";
    opened.push_back(PortInfo{o.device, o.port, p.qpn(0), p.nic_timestamps()});
    ports_.push_back(*std::move(port));
  }
  const std::string why =
      failures.empty() ? ""
                       : absl::StrCat(ports_.empty() ? "no UD port: " : "RoCE ports without a UD port: ",
                                      absl::StrJoin(failures, "; "));
  std::lock_guard<std::mutex> lock(mu_);
  if (why != port_error_ && !why.empty()) {
    LOG_WARNING << "mesh: " << why;
  }
  port_error_ = why;
  port_info_ = std::move(opened);
  return !ports_.empty();
}

void MeshRuntime::ClosePorts(const std::string& why) {
  LOG_WARNING << "mesh: closing the UD ports: " << why;
  ports_.clear();
  std::lock_guard<std::mutex> lock(mu_);
  port_info_.clear();
  port_error_ = why;
}

void MeshRuntime::ProbeLoop() {
  pthread_setname_np(pthread_self(), "roced-mesh");
  while (!stop_) {
    if (ports_.empty() && !OpenPorts()) {
      Sleep(kPortRetry);
      continue;
    }
    if (std::any_of(ports_.begin(), ports_.end(), [](const auto& p) { return p->Removing(); })) {
      ClosePorts("a device is being removed or its port failed");
      continue;
    }
    ProbeTurn();
  }
}

void MeshRuntime::SendDue(int64_t now_ns) {
  std::vector<mesh::MeshRequest> requests;
  std::vector<mesh::MeshOutcome> lost;
  std::vector<Where> where;
  std::vector<std::pair<size_t, mesh::MeshTarget>> rail_of;  // per request: local port, target
  uint32_t mtu = UINT32_MAX;
  for (const auto& p : ports_) mtu = std::min(mtu, p->active_mtu());
  const size_t qps = ports_[0]->qps();
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests = prober_->Due(now_ns, kSendsPerTurn, mtu);
    lost = prober_->ExpireLost(now_ns);
    for (const mesh::MeshOutcome& o : lost) where.push_back(WhereLocked(o.peer));
    // Rails rotate with the flow label (above the bits that pick the QP):
    // this node's port i probes the peer's rail i, over the rails both have.
    for (const mesh::MeshRequest& r : requests) {
      auto it = peers_.find(r.peer);
      const size_t rails = it == peers_.end() ? 0 : std::min(ports_.size(), it->second.rails.size());
      const size_t rail = rails == 0 ? 0 : (r.flow_label / qps) % rails;
      rail_of.emplace_back(rail, rails == 0 ? r.target : it->second.rails[rail]);
    }
  }
  for (size_t i = 0; i < lost.size(); ++i) CountOutcome(lost[i], where[i]);
  for (size_t i = 0; i < requests.size(); ++i) {
    const mesh::MeshRequest& r = requests[i];
    probe::UdAddress to{rail_of[i].second.gid, rail_of[i].second.qpn};
    probe::UdPort& port = *ports_[rail_of[i].first];
    const size_t qp = r.flow_label % port.qps();
    absl::Status st = port.Send(qp, to, r.dscp, probe::MeshFlowLabel(r.flow_label), r.bytes, r.id);
    if (!st.ok()) {
      LOG_DEBUG << "mesh: send to " << r.peer << ": " << st.message();
      std::lock_guard<std::mutex> lock(mu_);
      prober_->SendFailed(r.id);
    }
  }
}

void MeshRuntime::OnDatagram(size_t port, const probe::UdReceived& r) {
  if (r.payload.size() > 5 && r.payload[5] == static_cast<uint8_t>(mesh::ProbeType::kRequest)) {
    // Host clock for both of the responder's stamps: a NIC t2 with a host
    // t3 would mix clocks.
    const int64_t t2 = r.nic_stamp ? MonotonicNs() : r.stamp_ns;
    absl::StatusOr<mesh::MeshAnswer> answer = mesh::MeshProber::Answer(r.payload, t2, MonotonicNs(), false);
    if (!answer.ok()) return;
    // Answered from the port (rail) the request came to.
    absl::Status st =
        ports_[port]->Send(r.qp, r.from, answer->dscp, probe::MeshFlowLabel(answer->flow_label), answer->bytes, 0);
    if (st.ok()) {
      ++answered_;
      if (families_.answered != nullptr) families_.answered->Increment();
    }
    return;
  }
  std::optional<mesh::MeshOutcome> outcome;
  Where where;
  {
    std::lock_guard<std::mutex> lock(mu_);
    outcome = prober_->OnReply(r.payload, r.stamp_ns, r.nic_stamp);
    if (!outcome.has_value()) return;
    where = WhereLocked(outcome->peer);
  }
  CountOutcome(*outcome, where);
}

MeshRuntime::Where MeshRuntime::WhereLocked(const std::string& peer) const {
  Where w;
  w.tor = self_.tor;
  auto it = peers_.find(peer);
  if (it != peers_.end()) {
    w.peer_tor = it->second.member.tor;
    w.same_tor = it->second.scope == mesh::PeerScope::kSameTor;
  }
  return w;
}

absl::Status MeshRuntime::PollPorts(absl::Duration wait) {
  auto on_sent = [this](const probe::UdSent& s) {
    if (s.cookie == 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (s.status.ok()) {
      prober_->Sent(s.cookie, s.stamp_ns, s.nic_stamp);
    } else {
      prober_->SendFailed(s.cookie);
    }
  };
  // One port: its own Poll waits. Several: wait on all their descriptors,
  // then let each handle what it has without waiting.
  absl::Duration each = wait;
  if (ports_.size() > 1) {
    std::vector<pollfd> fds;
    for (const auto& p : ports_) {
      for (int fd : p->WaitFds()) fds.push_back({fd, POLLIN, 0});
    }
    const int ms = static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(wait), 60'000));
    if (::poll(fds.data(), fds.size(), std::max(ms, 0)) < 0 && errno != EINTR) {
      return absl::InternalError(absl::StrCat("poll on the UD ports: ", strerror(errno)));
    }
    each = absl::ZeroDuration();
  }
  for (size_t i = 0; i < ports_.size(); ++i) {
    absl::StatusOr<size_t> handled =
        ports_[i]->Poll(each, [this, i](const probe::UdReceived& r) { OnDatagram(i, r); }, on_sent);
    if (!handled.ok()) return handled.status();
  }
  return absl::OkStatus();
}

void MeshRuntime::ProbeTurn() {
  SendDue(MonotonicNs());
  int64_t wake = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake = prober_->NextWake();
  }
  const int64_t before = MonotonicNs();
  const absl::Duration wait =
      std::clamp(absl::Nanoseconds(wake == INT64_MAX ? INT64_MAX : wake - before), absl::ZeroDuration(), kMaxTurn);
  if (absl::Status st = PollPorts(wait); !st.ok()) ClosePorts(std::string(st.message()));
  const int64_t now = MonotonicNs();
  // How late the loop is against the wake it asked for (early when a
  // completion woke it); what it handled on waking counts in.
  const int64_t lag = std::max<int64_t>(now - before - absl::ToInt64Nanoseconds(wait), 0);
  std::lock_guard<std::mutex> lock(mu_);
  loop_lag_.Record(now, absl::Nanoseconds(lag));
  if (now - last_expire_ns_ > 10'000'000'000) {
    last_expire_ns_ = now;
    prober_->ExpireResults(now);
  }
}

void MeshRuntime::CountOutcome(const mesh::MeshOutcome& o, const Where& where) {
  const std::string& peer_tor = where.peer_tor;
  const bool same_tor = where.same_tor;
  if (families_.sent == nullptr) return;
  const std::string peer = same_tor ? o.peer : "";
  std::lock_guard<std::mutex> lock(series_mu_);
  const std::map<std::string, std::string> labels = {
      {"tor", where.tor}, {"peer_tor", peer_tor}, {"peer", peer}, {"size", Label(o.size_bytes)}, {"dscp", Label(o.dscp)}};
  prometheus::Counter& sent = families_.sent->Add(labels);
  prometheus::Counter& lost = families_.lost->Add(labels);
  auto& held = counters_[{peer_tor, peer}];
  if (std::find(held.begin(), held.end(), &sent) == held.end()) {
    held.push_back(&sent);
    held.push_back(&lost);
  }
  sent.Increment();
  if (!o.answered) {
    lost.Increment();
    return;
  }
  if (o.rtt_ns <= 0) return;
  prometheus::Histogram*& h = histograms_[{peer_tor, peer}];
  if (h == nullptr) {
    h = &families_.rtt->Add({{"tor", where.tor}, {"peer_tor", peer_tor}, {"peer", peer}},
                   prometheus::Histogram::BucketBoundaries{10e-6, 20e-6, 50e-6, 100e-6, 200e-6, 500e-6, 1e-3, 2e-3,
                                                           5e-3, 10e-3, 20e-3, 50e-3, 100e-3, 200e-3, 500e-3, 1});
  }
  h->Observe(static_cast<double>(o.rtt_ns) / 1e9);
}

void MeshRuntime::PruneSeries(const std::map<std::string, PeerInfo>& peers) {
  if (families_.sent == nullptr) return;
  std::set<std::pair<std::string, std::string>> live;
  for (const auto& [name, info] : peers) {
    live.insert({info.member.tor, info.scope == mesh::PeerScope::kSameTor ? name : ""});
  }
  std::lock_guard<std::mutex> lock(series_mu_);
  for (auto it = counters_.begin(); it != counters_.end();) {
    if (live.contains(it->first)) {
      ++it;
      continue;
    }
    for (size_t i = 0; i + 1 < it->second.size(); i += 2) {
      families_.sent->Remove(it->second[i]);
      families_.lost->Remove(it->second[i + 1]);
    }
    if (auto h = histograms_.find(it->first); h != histograms_.end()) {
      families_.rtt->Remove(h->second);
      histograms_.erase(h);
    }
    it = counters_.erase(it);
  }
}

std::optional<mesh::WindowTotals> MeshRuntime::TotalsSince(absl::Time since) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!prober_.has_value()) return std::nullopt;
  const int64_t now = MonotonicNs();
  int64_t since_ns = 0;
  if (since != absl::InfinitePast()) {
    since_ns = std::max<int64_t>(0, now - absl::ToInt64Nanoseconds(std::max(absl::Now() - since, absl::ZeroDuration())));
  }
  return prober_->Totals(now, since_ns);
}

absl::StatusOr<roced::v1::ListMeshResultsResponse> MeshRuntime::List(
    const roced::v1::ListMeshResultsRequest& request) const {
  if (!enabled()) {
    return absl::FailedPreconditionError("the mesh is off: start roced with --mesh-inventory FILE or --mesh-dns NAME:PORT");
  }
  if (request.peer().size() > mesh::kMaxInventoryField) {
    return absl::InvalidArgumentError(
        absl::StrCat("peer: ", request.peer().size(), " bytes; a member name is at most ", mesh::kMaxInventoryField));
  }
  roced::v1::ListMeshResultsResponse out;
  const std::optional<double> pressure = CpuPressure();  // a file read: not under the lock
  std::lock_guard<std::mutex> lock(mu_);
  if (!prober_.has_value()) return absl::FailedPreconditionError(absl::StrCat("the mesh did not start: ", prober_error_));
  out.set_node_name(agent_->State().hostname());
  out.set_tor(self_.tor);
  out.set_pod(self_.pod);
  *out.mutable_window() = util::ToProto(options_.prober.results.window);
  const bool nic = !port_info_.empty() && std::all_of(port_info_.begin(), port_info_.end(),
                                                      [](const PortInfo& p) { return p.nic_clock; });
  out.set_clock(nic ? "nic" : "software");
  out.set_probes_per_second(prober_->schedule().ProbesPerSecond());
  out.set_slowdown(prober_->schedule().slowdown());
  out.set_requests_answered(answered_.load());
  const int64_t now = MonotonicNs();
  const mesh::HostState host = HostStateLocked(now, pressure);
  out.set_host_busy(mesh::HostBusyReason(host));
  out.set_cpu_pressure(pressure.value_or(-1));
  *out.mutable_max_loop_lag() = util::ToProto(host.max_loop_lag);
  *out.mutable_uptime() = util::ToProto(host.uptime);
  for (const std::string* problem : {&inventory_error_, &port_error_}) {
    if (problem->empty()) continue;
    out.set_problem(out.problem().empty() ? *problem : absl::StrCat(out.problem(), "; ", *problem));
  }
  for (const auto& [name, info] : peers_) {
    roced::v1::MeshPeer* p = out.add_peers();
    p->set_name(name);
    p->set_address(info.member.address);
    p->set_tor(info.member.tor);
    p->set_pod(info.member.pod);
    p->set_scope(ScopeName(info.scope));
    p->set_reachable(info.target.has_value());
    p->set_error(info.error);
  }
  for (const mesh::SeriesWindow& w : prober_->Snapshot(now)) {
    if (!request.peer().empty() && w.peer != request.peer()) continue;
    roced::v1::MeshSeries* s = out.add_series();
    s->set_peer_tor(prober_->TorOf(w.peer));
    FillSeries(w, s);
  }
  return out;
}

void MeshRuntime::AddResponder(roced::v1::DescribeResponse* response) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (roced::v1::MeshEndpoint& e : *response->mutable_endpoints()) {
    for (const PortInfo& p : port_info_) {
      if (e.device() == p.device && e.port() == p.port) {
        e.set_ud_qpn(p.qpn);
        e.set_qkey(probe::kMeshQkey);
      }
    }
  }
}

}  // namespace roced::agent

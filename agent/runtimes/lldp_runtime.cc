#include "agent/runtimes/lldp_runtime.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/core/agent.h"
#include "hal/lldp.h"
#include "metrics/lldp_collector.h"
#include "util/escape.h"
#include "util/log.h"
#include "util/proto_time.h"
#include "util/thread_name.h"

namespace roced::agent {

namespace v1 = roced::v1;

bool LldpTable::Heard(const std::string& netdev, v1::LldpNeighbor neighbor, absl::Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  const Key key{netdev, neighbor.chassis_id(), neighbor.port_id()};
  if (neighbor.ttl_seconds() == 0) {
    entries_.erase(key);
    return false;
  }
  auto it = entries_.find(key);
  uint64_t frames = 1;
  if (it != entries_.end()) {
    frames = it->second.neighbor.frames() + 1;
  } else {
    MakeRoom(netdev);
  }
  const absl::Time expires = now + absl::Seconds(neighbor.ttl_seconds());
  neighbor.set_netdev(netdev);
  neighbor.set_frames(frames);
  *neighbor.mutable_last_heard() = util::ToProto(now);
  *neighbor.mutable_expires_at() = util::ToProto(expires);
  entries_[key] = Entry{std::move(neighbor), now, expires};
  return frames == 1;
}

void LldpTable::MakeRoom(const std::string& netdev) {
  auto oldest = entries_.end();
  size_t count = 0;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->first.netdev != netdev) continue;
    ++count;
    if (oldest == entries_.end() || it->second.heard < oldest->second.heard) oldest = it;
  }
  if (count >= kMaxNeighborsPerNetdev) entries_.erase(oldest);
}

void LldpTable::Retain(const std::set<std::string>& netdevs) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(entries_, [&](const auto& e) { return !netdevs.contains(e.first.netdev); });
}

std::vector<v1::LldpNeighbor> LldpTable::Current(absl::Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(entries_, [&](const auto& e) { return e.second.expires <= now; });
  std::vector<v1::LldpNeighbor> out;
  for (const auto& [key, entry] : entries_) out.push_back(entry.neighbor);
  return out;
}

absl::Time LldpTable::NextExpiry() const {
  std::lock_guard<std::mutex> lock(mu_);
  absl::Time next = absl::InfiniteFuture();
  for (const auto& [key, entry] : entries_) next = std::min(next, entry.expires);
  return next;
}

std::optional<v1::LldpNeighbor> DriverPeerView(const std::string& netdev, const hal::DcbReading& reading) {
  if (!reading.peer_pfc && !reading.peer_ets && !(reading.peer_apps && !reading.peer_apps->empty())) {
    return std::nullopt;
  }
  v1::LldpNeighbor n;
  n.set_netdev(netdev);
  n.set_chassis_id_subtype("driver");
  n.add_notes("the DCB settings the NIC's driver learned from its link partner (DCB_ATTR_IEEE_PEER_*)");
  if (reading.peer_pfc) {
    v1::SwitchPfc* pfc = n.mutable_pfc();
    pfc->set_source(v1::DCB_SOURCE_DCB_PEER);
    pfc->set_enabled(reading.peer_pfc->pfc_en);
    pfc->set_capability(reading.peer_pfc->pfc_cap);
    pfc->set_mbc(reading.peer_pfc->mbc);
  }
  if (reading.peer_ets) {
    v1::SwitchEts* ets = n.mutable_ets();
    ets->set_source(v1::DCB_SOURCE_DCB_PEER);
    ets->set_willing(reading.peer_ets->willing);
    ets->set_cbs(reading.peer_ets->cbs);
    ets->set_max_tcs(reading.peer_ets->ets_cap);
    for (int i = 0; i < 8; ++i) {
      ets->add_priority_to_tc(reading.peer_ets->prio_tc[i]);
      ets->add_tc_bandwidth(reading.peer_ets->tc_tx_bw[i]);
      ets->add_tsa(reading.peer_ets->tc_tsa[i]);
    }
  }
  for (const hal::DcbApp& a : reading.peer_apps.value_or(std::vector<hal::DcbApp>{})) {
    if (static_cast<size_t>(n.apps_size()) >= hal::kMaxLldpApps) break;
    v1::SwitchApp* app = n.add_apps();
    app->set_source(v1::DCB_SOURCE_DCB_PEER);
    app->set_selector(a.selector);
    app->set_protocol(a.protocol);
    app->set_priority(a.priority);
  }
  return n;
}

void MergeDriverPeer(const v1::LldpNeighbor& driver, v1::LldpNeighbor* heard) {
  if (!heard->has_pfc() && driver.has_pfc()) *heard->mutable_pfc() = driver.pfc();
  if (!heard->has_ets() && driver.has_ets()) *heard->mutable_ets() = driver.ets();
  if (heard->apps().empty()) *heard->mutable_apps() = driver.apps();
}

LldpRuntime::LldpRuntime(Agent* agent, LldpRuntimeOptions options)
    : agent_(agent),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : util::RealClock()),
      collector_(std::make_shared<metrics::LldpCollector>([this] { return Neighbors(); })) {}

LldpRuntime::~LldpRuntime() { Stop(); }

void LldpRuntime::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (thread_.joinable()) return;
    stop_ = false;
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    thread_ = std::thread([this] { Run(); });
  }
  state_listener_ = agent_->AddStateListener([this] { Resync(); });
}

void LldpRuntime::Stop() {
  if (state_listener_ != 0) agent_->RemoveStateListener(state_listener_);
  state_listener_ = 0;
  std::thread thread;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) return;
    stop_ = true;
    const uint64_t one = 1;
    if (write(wake_fd_, &one, sizeof(one)) < 0) {
      LOG_WARNING << "LLDP: cannot wake the listener";
    }
    thread = std::move(thread_);
  }
  thread.join();
  sockets_.clear();
  std::lock_guard<std::mutex> lock(mu_);
  close(wake_fd_);
  wake_fd_ = -1;
}

void LldpRuntime::Resync() {
  std::lock_guard<std::mutex> lock(mu_);
  if (wake_fd_ < 0) return;
  resync_ = true;
  const uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof(one)) < 0) {
    LOG_WARNING << "LLDP: cannot wake the listener";
  }
}

std::vector<v1::LldpNeighbor> LldpRuntime::Neighbors() {
  std::vector<v1::LldpNeighbor> out = table_.Current(clock_->Now());
  std::lock_guard<std::mutex> lock(peers_mu_);
  for (const auto& [netdev, driver] : peers_) {
    bool heard = false;
    for (auto& n : out) {
      if (n.netdev() != netdev) continue;
      MergeDriverPeer(driver, &n);
      heard = true;
    }
    if (!heard) out.push_back(driver);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.netdev() < b.netdev(); });
  return out;
}

void LldpRuntime::RefreshDriverPeers(const std::set<std::string>& netdevs) {
  std::map<std::string, v1::LldpNeighbor> peers;
  if (options_.dcb_read) {
    for (const std::string& netdev : netdevs) {
      auto reading = options_.dcb_read(netdev);
      if (!reading.ok()) continue;  // no DCB, or gone
      if (auto view = DriverPeerView(netdev, *reading)) peers[netdev] = std::move(*view);
    }
  }
  std::lock_guard<std::mutex> lock(peers_mu_);
  peers_ = std::move(peers);
}

std::vector<std::shared_ptr<prometheus::Collectable>> LldpRuntime::Collectables() { return {collector_}; }

void LldpRuntime::Run() {
  util::NameThisThread("roced-lldp");
  for (;;) {
    bool resync = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      std::swap(resync, resync_);
    }
    if (resync || clock_->Now() - synced_ >= kResyncInterval) SyncSockets();
    std::vector<hal::LldpSocket*> sockets;
    for (auto& [netdev, socket] : sockets_) sockets.push_back(socket.get());
    for (const size_t i : hal::WaitForLldp(sockets, wake_fd_, NextWait())) ReadFrames(sockets[i]);
    uint64_t drained = 0;
    if (read(wake_fd_, &drained, sizeof(drained)) < 0 && errno != EAGAIN) {
      LOG_WARNING << "LLDP: wake read failed";
    }
    absl::SleepFor(kMinRoundGap);  // the flood bound (header comment)
  }
}

absl::Duration LldpRuntime::NextWait() {
  const absl::Time now = clock_->Now();
  const absl::Time until = std::min(synced_ + kResyncInterval, table_.NextExpiry());
  return std::clamp(until - now, absl::ZeroDuration(), kResyncInterval);
}

void LldpRuntime::SyncSockets() {
  synced_ = clock_->Now();
  std::set<std::string> netdevs;
  const v1::NodeState state = agent_->State();
  for (const auto& device : state.devices()) {
    for (const auto& port : device.ports()) {
      if (port.link_layer() == "Ethernet" && !port.netdev().empty()) netdevs.insert(port.netdev());
    }
  }
  std::erase_if(sockets_, [&](const auto& s) { return !netdevs.contains(s.first); });
  std::erase_if(failures_, [&](const auto& f) { return !netdevs.contains(f.first); });
  table_.Retain(netdevs);
  for (const std::string& netdev : netdevs) {
    if (sockets_.contains(netdev)) continue;
    auto socket = options_.open(netdev);
    if (socket.ok()) {
      failures_.erase(netdev);
      LOG_INFO << "LLDP: listening on " << netdev;
      sockets_[netdev] = std::move(*socket);
    } else if (failures_[netdev] != socket.status().message()) {
      failures_[netdev] = std::string(socket.status().message());
      LOG_WARNING << "LLDP: cannot listen on " << netdev << ": " << socket.status().message();
    }
  }
  ReportHealth(failures_);
  RefreshDriverPeers(netdevs);
}

void LldpRuntime::ReportHealth(const std::map<std::string, std::string>& failures) {
  if (failures.empty()) {
    agent_->SetComponentHealth("lldp", true, absl::StrCat("listening on ", sockets_.size(), " netdev(s)"));
    return;
  }
  std::vector<std::string> why;
  for (const auto& [netdev, message] : failures) why.push_back(absl::StrCat(netdev, ": ", message));
  agent_->SetComponentHealth("lldp", false, absl::StrCat("cannot listen for LLDP on ", absl::StrJoin(why, "; ")));
}

void LldpRuntime::ReadFrames(hal::LldpSocket* socket) {
  for (size_t i = 0; i < kFramesPerRound; ++i) {
    auto frame = socket->Read();
    if (!frame.ok()) {
      LOG_DEBUG << "LLDP: " << frame.status().message();
      continue;
    }
    if (!frame->has_value()) return;
    auto neighbor = hal::DecodeLldpFrame(**frame);
    if (!neighbor.ok()) {
      LOG_DEBUG << "LLDP on " << socket->netdev() << ": " << neighbor.status().message();
      continue;
    }
    const std::string who = absl::StrCat(util::Quoted(neighbor->system_name()), " port ",
                                         util::Quoted(neighbor->port_id()), " (chassis ", neighbor->chassis_id(), ")");
    if (table_.Heard(socket->netdev(), std::move(*neighbor), clock_->Now())) {
      LOG_INFO << "LLDP: " << socket->netdev() << " hears " << who;
    }
  }
}

}  // namespace roced::agent

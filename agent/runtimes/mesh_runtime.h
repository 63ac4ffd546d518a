// The fleet mesh in the agent: who to probe, the probes over
// UD queue pairs, the answers to other agents' probes, and what came of
// them for ListMeshResults and /metrics.
//
// Membership (MeshMembership, mesh_membership.h): the inventory file or a
// DNS name, and each peer's responders from its Describe. This node is the
// member named as its hostname; a member line without a ToR takes the one
// this agent knows (config mesh.tor, else LLDP). The pinglist
// (lib/mesh/pinglist) is recomputed from the membership each refresh; a
// peer's responders are cached for mesh::kDescribeTtl, a failure retried
// after mesh::kDescribeRetry.
//
// Transport: one probe::UdPort on every RoCE port Describe lists (a rail
// each, at most kMaxMeshPorts): each sends this agent's probes and answers
// other agents' on the same QPs. A port that goes away (link down, device
// removed, fatal error) is closed at once, so `rdma link delete` is not
// held up, and opened again when the port is back.
//
// Rates are the schedule's (10 a second to each peer under the ToR, 1
// across); under CPU pressure (/proc/pressure/cpu "some" avg10 over
// mesh::kPressureHigh percent, read by hal/pressure) the mesh halves its
// rates, down to a tenth, and speeds up again below mesh::kPressureLow
// (lib/mesh/slowdown): slower, never stopped. This class owns the threads
// and the ports; the decisions are lib/mesh's.
//
// Host state (lib/mesh/host_state): the CPU pressure, the probe loop's
// largest lateness over the window (how long after the wake it asked for it
// woke) and how long the mesh has run; ListMeshResults says why the host
// is busy, and /metrics has roced_mesh_host_busy.
//
// Threads: "roced-mesh" (the probe loop: sends, polls the completion
// channels, expires) and "roced-mesh-mem" (inventory, pinglist,
// Describe calls, which may block). Public methods are thread-safe; mu_ is
// a leaf.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/runtimes/mesh_membership.h"
#include "mesh/host_state.h"
#include "mesh/membership.h"
#include "mesh/pinglist.h"
#include "mesh/prober.h"
#include "metrics/families.h"
#include "model/defaults.h"
#include "probe/ud_port.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "roced/v1/agent.pb.h"
#include "roced/v1/peer.pb.h"
#include "util/clock.h"

namespace roced::agent {

class Agent;
class LldpRuntime;

// Probes of a described peer lost in a row before it is described again.
inline constexpr uint32_t kLostBeforeRedescribe = 10;
// --mesh-dscps: "26,0" -> {26, 0}. INVALID_ARGUMENT naming the flag, the
// value and the range (at most mesh::kMaxMeshClasses values of 0..63, no
// repeats).
absl::StatusOr<std::vector<uint32_t>> ParseMeshDscps(const std::string& text);

struct MeshRuntimeOptions {
  // Where the membership comes from: an inventory file, or a DNS name that
  // resolves to every agent (a Kubernetes headless Service over the
  // DaemonSet), each address's Describe saying who it is. Neither: off.
  std::string inventory_path;
  std::string dns_name;
  uint16_t dns_port = model::defaults::kGrpcPort;
  ResolveFn resolve;  // unset: util::ResolveAll (getaddrinfo)
  absl::Duration refresh = absl::Seconds(15);
  mesh::MeshProberOptions prober;
  mesh::PinglistOptions pinglist;
  // Peers' Describe; unset: gRPC with `peer_credentials` (null: plaintext).
  DescribeFn describe;
  std::shared_ptr<grpc::ChannelCredentials> peer_credentials;
  prometheus::Registry* registry = nullptr;
  std::string procfs_root = model::defaults::kProcfsRoot;
  // The membership loop's clock (its waits, DNS listings, describe
  // schedule). The probe loop waits on its sockets in real time. Null:
  // util::RealClock(). Not owned.
  util::Clock* clock = nullptr;
};

class MeshRuntime {
 public:
  MeshRuntime(Agent* agent, LldpRuntime* lldp, MeshRuntimeOptions options);
  ~MeshRuntime();
  MeshRuntime(const MeshRuntime&) = delete;
  MeshRuntime& operator=(const MeshRuntime&) = delete;

  // Starts the threads when an inventory is configured.
  void Start();
  void Stop();
  bool enabled() const { return !options_.inventory_path.empty() || !options_.dns_name.empty(); }

  // ListMeshResults: FAILED_PRECONDITION when the mesh is off;
  // INVALID_ARGUMENT for a peer name over 253 bytes.
  absl::StatusOr<roced::v1::ListMeshResultsResponse> List(const roced::v1::ListMeshResultsRequest& request) const;

  // Every peer's probes added up over the window, of the slots that began
  // at or after `since` (wall clock; InfinitePast: the whole window): the
  // confirm policy's mesh gates and their baseline. nullopt while the mesh
  // is off or its prober did not start.
  std::optional<mesh::WindowTotals> TotalsSince(absl::Time since) const;

  // Fills in the UD QPN and Q_Key of the endpoint the responder serves
  // (Describe's answer).
  void AddResponder(roced::v1::DescribeResponse* response) const;

 private:
  struct PeerInfo {
    mesh::Member member;
    mesh::PeerScope scope = mesh::PeerScope::kSameTor;
    std::optional<mesh::MeshTarget> target;  // its first rail's responder
    // Every rail's responder (each RoCE port with one, in Describe's order);
    // local port i probes rails[i % rails.size()].
    std::vector<mesh::MeshTarget> rails;
    std::string error = "not described yet";
    absl::Time next_describe = absl::InfinitePast();
  };
  struct PortInfo {
    std::string device;
    uint32_t port = 0;
    uint32_t qpn = 0;
    bool nic_clock = false;
  };
  void MembersLoop();
  void ProbeLoop();
  // One membership round: the members, this node's place and the pinglist;
  // then Describe for the peers due one.
  void RefreshMembers();
  void DescribePeers();
  // Opens a UD port on every RoCE endpoint (at most kMaxMeshPorts); false
  // when none opened (logged once per reason).
  bool OpenPorts();
  void ClosePorts(const std::string& why);
  // Waits up to `wait` on every port and handles their completions.
  absl::Status PollPorts(absl::Duration wait);
  // One turn of the probe loop with the port open.
  void ProbeTurn();
  void SendDue(int64_t now_ns);
  void OnDatagram(size_t port, const probe::UdReceived& r);
  // Where a peer stands, for its metric labels.
  struct Where {
    std::string tor;       // this node's
    std::string peer_tor;
    bool same_tor = false;
  };
  Where WhereLocked(const std::string& peer) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CountOutcome(const mesh::MeshOutcome& outcome, const Where& where);
  // Drops the metric series of peers no longer probed.
  void PruneSeries(const std::map<std::string, PeerInfo>& peers);
  std::optional<double> CpuPressure() const;
  void UpdateSlowdown(std::optional<double> pressure);
  // The host's state now; its busy gauge set from it.
  mesh::HostState HostStateLocked(int64_t now_ns, std::optional<double> pressure) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UpdateHostBusy(std::optional<double> pressure);
  void UpdatePeerGauges() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Sleep(absl::Duration d);

  Agent* const agent_;
  LldpRuntime* const lldp_;
  MeshRuntimeOptions options_;

  mutable std::mutex mu_;
  std::optional<mesh::MeshProber> prober_ ABSL_GUARDED_BY(mu_);
  std::string prober_error_ ABSL_GUARDED_BY(mu_);
  mesh::Member self_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, PeerInfo> peers_ ABSL_GUARDED_BY(mu_);
  std::vector<PortInfo> port_info_ ABSL_GUARDED_BY(mu_);  // one per open port
  std::string port_error_ ABSL_GUARDED_BY(mu_);
  std::string inventory_error_ ABSL_GUARDED_BY(mu_);
  // The probe loop's lateness, the largest a slot of the results' window.
  mesh::WindowMax loop_lag_ ABSL_GUARDED_BY(mu_);
  int64_t started_ns_ ABSL_GUARDED_BY(mu_) = 0;  // monotonic, when Start ran
  bool host_busy_ ABSL_GUARDED_BY(mu_) = false;  // as last logged

  // Owned by the probe loop's thread: one per RoCE port (rail).
  std::vector<std::unique_ptr<probe::UdPort>> ports_;
  MeshMembership membership_;  // the members thread's
  int64_t last_expire_ns_ = 0;

  std::atomic<uint64_t> answered_{0};
  std::atomic<bool> stop_{false};
  std::mutex wake_mu_;
  std::condition_variable wake_;
  std::thread members_thread_;
  std::thread probe_thread_;

  // Metrics (null without a registry).
  metrics::MeshFamilies families_;
  // roced_mesh_info's one series, the one set last, so that `rocectl mesh
  // --prometheus` can name the prober behind an instance.
  prometheus::Gauge* info_series_ = nullptr;
  void SetInfoLocked(const mesh::Member& self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The series each peer label ("" across ToRs: by peer ToR) holds.
  std::mutex series_mu_;
  std::map<std::pair<std::string, std::string>, std::vector<prometheus::Counter*>> counters_ ABSL_GUARDED_BY(series_mu_);
  std::map<std::pair<std::string, std::string>, prometheus::Histogram*> histograms_ ABSL_GUARDED_BY(series_mu_);
};

}  // namespace roced::agent

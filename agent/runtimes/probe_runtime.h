// The agent's RDMA probes: the wiring of the probe engine (lib/probe) to
// the agent's config, threads, gRPC and metrics.
//
//  - Initiator (RunProbe, and the scheduler for probes.peers):
//    probe::Initiator runs each probe start to end, talking to the peer
//    agent through a probe::PeerClient (GrpcPeerClient unless the options
//    give one). Every failure becomes a result with a reason
//    (peer_unavailable, connect_timeout, wc_error:<status>, ...), never a
//    hang: each step has a bound.
//  - Responder (OpenEndpoint/CloseEndpoint): probe::ResponderRegistry, any
//    number of peers at once, up to `max_responder_endpoints`; each
//    endpoint has a lease and is released by the lease thread if its
//    initiator vanishes without closing it.
//  - Requests are resolved against the accepted config by
//    probe::ResolveParams; results go to the history and the metrics here.
//
// Owned by the Server (like CountersRuntime). Metrics are registered on
// the agent's registry: roced_probe_latency_seconds{peer,device} (one
// observation per sample, one-way latency), roced_probe_bandwidth_bits_per_second
// {peer,device}, roced_probe_failures_total{peer,reason} and
// roced_probe_last_success_timestamp_seconds{peer,kind}.
//
// Threads: Start() runs the lease reaper ("roced-leases", every second
// while endpoints are open, else asleep until one is) and the scheduler
// ("roced-schedule", asleep until a probe is due, the agent's state changes
// or a probe ends); scheduled probes run on worker
// threads of their own, joined by the scheduler and by Stop(); RunProbe
// runs its probe on the caller's thread. Every public method is
// thread-safe. ProbeRuntime owns the engine objects, the default endpoint
// factory and peer client, and its threads; not the agent, nor a factory
// or peer client given in the options.
#pragma once

#include <grpcpp/security/credentials.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/core/agent.h"
#include "metrics/families.h"
#include "model/defaults.h"
#include "probe/baseline.h"
#include "probe/endpoint.h"
#include "probe/history.h"
#include "probe/initiator.h"
#include "probe/params.h"
#include "probe/peer_client.h"
#include "probe/responder.h"
#include "probe/schedule.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "roced/v1/agent.pb.h"
#include "roced/v1/peer.pb.h"
#include "util/clock.h"
#include "util/triggered_loop.h"

namespace roced::agent {

struct ProbeRuntimeOptions {
  // Where the roced_probe_* families are registered (the registry /metrics
  // exposes). Required; not owned.
  prometheus::Registry* registry = nullptr;
  // The sysfs root local RDMA counters are read under.
  std::string sysfs_root = model::defaults::kSysfsRoot;
  // Endpoints come from here: NodeBackends::endpoints() (libibverbs on the
  // live kernel), or a test's fake. Null: none (every probe fails with
  // device_unavailable and OpenEndpoint with FAILED_PRECONDITION). Not owned.
  probe::EndpointFactory* factory = nullptr;
  // Bound on the OpenEndpoint call to the peer (connect included): a peer
  // agent that is down fails the probe with peer_unavailable within it.
  absl::Duration open_timeout = absl::Seconds(5);
  absl::Duration close_timeout = absl::Seconds(2);
  // The longest one latency round trip may take.
  absl::Duration round_trip_timeout = absl::Seconds(2);
  // A latency run fails with "timeout" past this.
  absl::Duration max_latency_run = absl::Seconds(120);
  // Bandwidth: how long outstanding writes may take to drain.
  absl::Duration completion_timeout = absl::Seconds(5);
  size_t max_responder_endpoints = 32;
  // One caller's share of them, and the memory their registrations may pin
  // (probe::ResponderLimits).
  size_t max_responder_endpoints_per_caller = 8;
  uint64_t max_responder_pinned_bytes = 128ull << 20;
  // Results kept per (peer, kind).
  size_t history_per_peer = 100;
  // Run probes.peers on their intervals.
  bool schedule = true;
  // Sent to peers as OpenEndpointRequest.initiator; default: the hostname.
  std::string name;
  // How the peer agents are called (tests pass a fake). Null: over gRPC
  // (GrpcPeerClient). Not owned.
  probe::PeerClient* peers = nullptr;
  // How GrpcPeerClient calls peers (the agent's client TLS); null: plaintext.
  std::shared_ptr<grpc::ChannelCredentials> peer_credentials;
  // Where the probe baselines per driver/firmware are kept
  // (<state-dir>/probe-baselines.json); empty: in memory only.
  std::string baseline_path;
  // Where the local driver's version is read (hal::DriverVersion).
  std::string procfs_root = model::defaults::kProcfsRoot;
  // The clock of the schedule, the lease reaper and the results' times.
  // Null: util::RealClock(). Not owned.
  util::Clock* clock = nullptr;
};

// The `peer` label of probes to addresses that are not configured peers.
inline constexpr char kAdhocPeerLabel[] = "adhoc";

class ProbeRuntime {
 public:
  // `agent` must outlive this object.
  explicit ProbeRuntime(Agent* agent, ProbeRuntimeOptions options = {});
  ~ProbeRuntime();
  ProbeRuntime(const ProbeRuntime&) = delete;
  ProbeRuntime& operator=(const ProbeRuntime&) = delete;

  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Cancels running probes, releases every responder endpoint, joins the
  // threads. Idempotent; RunProbe and OpenEndpoint answer UNAVAILABLE after.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // Agent.RunProbe. INVALID_ARGUMENT for a bad request, NOT_FOUND for a peer
  // that is neither in probes.peers nor a host:port, RESOURCE_EXHAUSTED
  // beyond the limits, UNAVAILABLE while stopping. Otherwise the result,
  // successful or not (failure_reason says why).
  absl::StatusOr<roced::v1::ProbeResult> RunProbe(const roced::v1::RunProbeRequest& request)
      ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<roced::v1::ProbeResult> ListResults(
      const roced::v1::ListProbeResultsRequest& request) const;
  std::vector<roced::v1::ProbeSummary> Summaries() const;
  // The configured peers' figures per local driver/firmware (the
  // diagnosis' probe_baseline check).
  roced::v1::ProbeBaselines Baselines() const { return baselines_.Snapshot(); }

  // Whether RunProbe's `peer` is one of the desired config's probes.peers
  // (by name or by address): what an operator may probe without admin.
  bool IsConfiguredPeer(const std::string& peer) const;

  // ProbePeer.OpenEndpoint: INVALID_ARGUMENT for a bad request,
  // FAILED_PRECONDITION without a usable RDMA port, RESOURCE_EXHAUSTED at
  // the endpoint limit.
  absl::StatusOr<roced::v1::OpenEndpointResponse> OpenEndpoint(
      const roced::v1::OpenEndpointRequest& request, const std::string& caller = "") ABSL_LOCKS_EXCLUDED(mu_);
  // ProbePeer.CloseEndpoint: NOT_FOUND for an unknown (or expired) id.
  absl::Status CloseEndpoint(const std::string& endpoint_id) ABSL_LOCKS_EXCLUDED(mu_);

  size_t responder_endpoints() const;
  int running_probes() const { return limiter_.running(); }

 private:
  // The probing port from the agent's current state and desired config.
  absl::StatusOr<probe::LocalPort> ResolveLocalPort() const;
  // Records a finished probe: history, metrics, the log, the baselines.
  void Record(const probe::InitiatorRun& run);
  // A configured peer's successful result into the baselines, under the
  // local device's driver and firmware now.
  void RecordBaseline(const roced::v1::ProbeResult& result);
  // The lease reaper's pass and the scheduler's: how long until a probe is
  // due (at most kScheduleBackstop), and a pass that starts the due ones.
  void ReapExpired() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Duration UntilNextDue() ABSL_LOCKS_EXCLUDED(mu_);
  void RunDueProbes() ABSL_LOCKS_EXCLUDED(mu_);
  void JoinFinishedWorkers(bool all) ABSL_LOCKS_EXCLUDED(workers_mu_);

  Agent* const agent_;
  ProbeRuntimeOptions options_;
  probe::EndpointFactory* factory_ = nullptr;
  std::unique_ptr<probe::PeerClient> owned_peers_;
  std::unique_ptr<probe::Initiator> initiator_;
  std::unique_ptr<probe::ResponderRegistry> responders_;
  probe::ProbeHistory history_;
  probe::ProbeBaselineStore baselines_;
  probe::ProbeLimiter limiter_;
  probe::ProbeSchedule schedule_;
  // The accepted config's probes section and the state version it was
  // copied at: a pass copies the state only when the version moved
  // (scheduler thread only).
  uint64_t probe_config_version_ = 0;
  uint64_t state_listener_ = 0;  // Agent::AddStateListener's id while scheduling
  roced::v1::ProbeConfig probe_config_;
  // Set by Stop(): running probes end with "cancelled".
  std::atomic<bool> stopping_{false};

  mutable std::mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;

  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::mutex workers_mu_;
  std::vector<Worker> workers_ ABSL_GUARDED_BY(workers_mu_);

  metrics::ProbeFamilies families_;

  // Last: their threads use everything above.
  // Every second while endpoints are open (a lease to end, a serving thread
  // that stopped on an error); with none it sleeps until one is opened.
  util::TriggeredLoop reaper_{{"roced-leases", "periodic", false, options_.clock},
                              [this] { return responders_->size() > 0 ? absl::Seconds(1) : absl::InfiniteDuration(); },
                              [this](const std::string&) { ReapExpired(); }};
  util::TriggeredLoop scheduler_{{"roced-schedule", "periodic", false, options_.clock},
                                 [this] { return UntilNextDue(); },
                                 [this](const std::string&) { RunDueProbes(); }};
};

// The kind's name in metrics, results and the CLI ("latency", "bandwidth").
using probe::ProbeKindName;

}  // namespace roced::agent

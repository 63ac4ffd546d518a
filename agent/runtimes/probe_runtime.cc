#include "agent/runtimes/probe_runtime.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"
#include "agent/runtimes/grpc_peer_client.h"
#include "hal/sysfs_discovery.h"
#include "model/probe_limits.h"
#include "probe/stats.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/proto_time.h"
#include "util/thread_name.h"

namespace roced::agent {

namespace {

namespace pl = model::probe_limits;

// The scheduler's longest sleep when nothing is due sooner.
constexpr absl::Duration kScheduleBackstop = absl::Seconds(60);
using util::FromProto;

const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  // One-way latency: microseconds on hardware, milliseconds on Soft-RoCE
  // or a congested fabric.
  static const auto* bounds = new prometheus::Histogram::BucketBoundaries{
      1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3,
      2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 0.1,  0.2,  0.5,  1};
  return *bounds;
}

}  // namespace

ProbeRuntime::ProbeRuntime(Agent* agent, ProbeRuntimeOptions options)
    : agent_(agent),
      options_(std::move(options)),
      history_(options_.history_per_peer),
      baselines_(options_.baseline_path) {
  baselines_.Load();
  if (options_.clock == nullptr) options_.clock = util::RealClock();
  if (options_.name.empty()) options_.name = util::Hostname("roced");
  factory_ = options_.factory;
  probe::PeerClient* peers = options_.peers;
  if (peers == nullptr) {
    owned_peers_ = std::make_unique<GrpcPeerClient>(options_.peer_credentials);
    peers = owned_peers_.get();
  }
  probe::InitiatorOptions io;
  io.name = options_.name;
  io.open_timeout = options_.open_timeout;
  io.close_timeout = options_.close_timeout;
  io.round_trip_timeout = options_.round_trip_timeout;
  io.max_latency_run = options_.max_latency_run;
  io.completion_timeout = options_.completion_timeout;
  io.sysfs_root = options_.sysfs_root;
  auto local_port = [this] { return ResolveLocalPort(); };
  initiator_ = std::make_unique<probe::Initiator>(std::move(io), factory_, peers, local_port);
  responders_ = std::make_unique<probe::ResponderRegistry>(
      factory_, local_port,
      probe::ResponderLimits{options_.max_responder_endpoints, options_.max_responder_endpoints_per_caller,
                             options_.max_responder_pinned_bytes});
  families_ = metrics::ProbeFamilies::Register(*options_.registry);
}

ProbeRuntime::~ProbeRuntime() { Stop(); }

void ProbeRuntime::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_ || stopped_) return;
  started_ = true;
  reaper_.Start();
  if (options_.schedule) {
    state_listener_ = agent_->AddStateListener([this] { scheduler_.Trigger("state changed"); });
    scheduler_.Start();
  }
}

void ProbeRuntime::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    stopping_.store(true);
  }
  // No endpoint is handed out after this; the open ones are released.
  responders_->Shutdown();
  if (state_listener_ != 0) agent_->RemoveStateListener(state_listener_);
  reaper_.Stop();
  scheduler_.Stop();
  JoinFinishedWorkers(/*all=*/true);
  if (absl::Status s = baselines_.Save(); !s.ok()) {
    LOG_WARNING << "probe baselines not saved: " << s.message();
  }
}

size_t ProbeRuntime::responder_endpoints() const { return responders_->size(); }

absl::StatusOr<probe::LocalPort> ProbeRuntime::ResolveLocalPort() const {
  return probe::ResolveLocalPort(agent_->State());
}

absl::StatusOr<roced::v1::ProbeResult> ProbeRuntime::RunProbe(
    const roced::v1::RunProbeRequest& request) {
  if (stopping_.load()) return absl::UnavailableError("agent is stopping");
  // Any gRPC thread: its own copy (the cached one is the scheduler's).
  const roced::v1::ProbeConfig pc = agent_->State().config().desired().probes();
  absl::StatusOr<probe::ProbeParams> params = probe::ResolveParams(request, pc);
  if (!params.ok()) return params.status();
  absl::StatusOr<probe::ProbeLimiter::Slot> slot = limiter_.TryAcquire(params->kind, probe::MaxConcurrent(pc));
  if (!slot.ok()) return slot.status();
  probe::InitiatorRun run = initiator_->Run(*params, &stopping_);
  Record(run);
  return std::move(run.result);
}

void ProbeRuntime::Record(const probe::InitiatorRun& run) {
  const roced::v1::ProbeResult& result = run.result;
  // Probes to addresses outside the config (an admin's ad-hoc RunProbe)
  // share one label value: they cannot grow the metric series without bound.
  const std::string peer = IsConfiguredPeer(result.peer()) ? result.peer() : std::string(kAdhocPeerLabel);
  if (result.success() && result.kind() == roced::v1::PROBE_KIND_LATENCY) {
    double sum = 0;
    std::vector<double> increments =
        probe::LatencyBucketIncrements(run.rtt_ns, LatencyBuckets(), &sum);
    families_.latency->Add({{"peer", peer}, {"device", result.device()}}, LatencyBuckets())
        .ObserveMultiple(increments, sum);
  } else if (result.success()) {
    families_.bandwidth->Add({{"peer", peer}, {"device", result.device()}})
        .Set(result.bandwidth().gbps() * 1e9);
  }
  history_.Add(result);
  if (result.success() && peer != kAdhocPeerLabel) RecordBaseline(result);
  if (result.success()) {
    families_.last_success->Add({{"peer", peer}, {"kind", ProbeKindName(result.kind())}})
        .Set(absl::ToDoubleSeconds(options_.clock->Now() - absl::UnixEpoch()));
  } else {
    families_.failures->Add({{"peer", peer}, {"reason", result.failure_reason()}}).Increment();
    LOG_INFO << "probe " << ProbeKindName(result.kind()) << " to " << result.peer()
             << " failed: " << result.failure_reason() << ": " << result.failure_detail();
  }
}

void ProbeRuntime::RecordBaseline(const roced::v1::ProbeResult& result) {
  probe::DeviceVersion version;
  const roced::v1::NodeState state = agent_->State();
  for (const auto& dev : state.devices()) {
    if (dev.name() != result.device()) continue;
    hal::Paths paths;
    paths.sysfs = options_.sysfs_root;
    paths.procfs = options_.procfs_root;
    version = {dev.driver(), hal::DriverVersion(paths, dev.driver()), dev.fw_version()};
  }
  baselines_.Add(result, version, options_.clock->Now());
  if (absl::Status s = baselines_.SaveIfDue(options_.clock->Now()); !s.ok()) {
    LOG_WARNING << "probe baselines not saved: " << s.message();
  }
}

std::vector<roced::v1::ProbeResult> ProbeRuntime::ListResults(
    const roced::v1::ListProbeResultsRequest& request) const {
  return history_.List(request.peer(), request.kind(), request.limit());
}

bool ProbeRuntime::IsConfiguredPeer(const std::string& peer) const {
  const roced::v1::ProbeConfig pc = agent_->State().config().desired().probes();
  for (const auto& p : pc.peers()) {
    if (p.name() == peer || p.address() == peer) return true;
  }
  return false;
}

std::vector<roced::v1::ProbeSummary> ProbeRuntime::Summaries() const {
  return history_.Summaries();
}

absl::StatusOr<roced::v1::OpenEndpointResponse> ProbeRuntime::OpenEndpoint(
    const roced::v1::OpenEndpointRequest& request, const std::string& caller) {
  if (stopping_.load()) return absl::UnavailableError("agent is stopping");
  absl::StatusOr<roced::v1::OpenEndpointResponse> opened = responders_->Open(request, caller);
  if (opened.ok()) reaper_.Trigger("endpoint opened");
  return opened;
}

absl::Status ProbeRuntime::CloseEndpoint(const std::string& endpoint_id) {
  return responders_->Close(endpoint_id);
}

// The responder registry stamps its leases on the system clock (lib/probe
// has no clock of its own yet): they are reaped on the same one.
void ProbeRuntime::ReapExpired() { responders_->ReapExpired(absl::Now()); }

void ProbeRuntime::JoinFinishedWorkers(bool all) {
  std::vector<Worker> finished;
  {
    std::lock_guard<std::mutex> lock(workers_mu_);
    for (auto it = workers_.begin(); it != workers_.end();) {
      if (all || it->done->load()) {
        finished.push_back(std::move(*it));
        it = workers_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& w : finished) w.thread.join();
}

absl::Duration ProbeRuntime::UntilNextDue() {
  std::lock_guard<std::mutex> lock(mu_);
  // A config change (new peers, intervals) triggers the loop (the state
  // listener), so does a probe worker ending; the cap is a backstop.
  return std::clamp(schedule_.NextDue() - options_.clock->Now(), absl::ZeroDuration(), kScheduleBackstop);
}

void ProbeRuntime::RunDueProbes() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
  }
  JoinFinishedWorkers(/*all=*/false);
  if (const uint64_t version = agent_->StateVersion(); version != probe_config_version_) {
    probe_config_ = agent_->State().config().desired().probes();
    probe_config_version_ = version;
  }
  const roced::v1::ProbeConfig& pc = probe_config_;
  std::vector<std::string> peers;
  for (const auto& peer : pc.peers()) peers.push_back(peer.name());
  const absl::Time now = options_.clock->Now();
  schedule_.Configure(peers,
                      pc.latency().has_interval() ? FromProto(pc.latency().interval())
                                                  : pl::kDefaultLatencyInterval,
                      pc.bandwidth().has_interval() ? FromProto(pc.bandwidth().interval())
                                                    : pl::kDefaultBandwidthInterval,
                      now);
  for (const probe::ScheduleKey& key : schedule_.Due(now)) {
    roced::v1::RunProbeRequest request;
    request.set_peer(key.peer);
    request.set_kind(key.kind);
    absl::StatusOr<probe::ProbeParams> params = probe::ResolveParams(request, pc);
    if (!params.ok()) {
      LOG_WARNING << "scheduled " << ProbeKindName(key.kind) << " probe to " << key.peer << ": "
                  << params.status().message();
      schedule_.Started(key, now);
      continue;
    }
    absl::StatusOr<probe::ProbeLimiter::Slot> slot =
        limiter_.TryAcquire(key.kind, probe::MaxConcurrent(pc));
    if (!slot.ok()) {
      // At the limit (on-demand probes, or a bandwidth probe running):
      // try again shortly rather than skipping a whole interval.
      schedule_.Defer(key, now, absl::Seconds(5));
      continue;
    }
    schedule_.Started(key, now);
    auto done = std::make_shared<std::atomic<bool>>(false);
    auto held = std::make_shared<probe::ProbeLimiter::Slot>(std::move(*slot));
    std::thread t([this, p = *params, held, done] {
      util::NameThisThread(p.kind == roced::v1::PROBE_KIND_BANDWIDTH ? "roced-probe-bw" : "roced-probe-lat");
      Record(initiator_->Run(p, &stopping_));
      held->Release();
      done->store(true);
      scheduler_.Trigger("probe finished");  // to join this thread
    });
    std::lock_guard<std::mutex> lock(workers_mu_);
    workers_.push_back(Worker{std::move(t), done});
  }
}

}  // namespace roced::agent

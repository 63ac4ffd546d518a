#include "agent/probe_runtime.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/util/time_util.h"
#include "model/validate.h"
#include "probe/counter_delta.h"
#include "probe/reason.h"
#include "probe/stats.h"
#include "probe/verbs_endpoint.h"
#include "roced/v1/agent.grpc.pb.h"
#include "util/log.h"
#include "model/match.h"
#include "model/probe_limits.h"
#include "util/fs.h"
#include "util/proto_time.h"

namespace roced::agent {

using google::protobuf::util::TimeUtil;

const char* ProbeKindName(roced::v1::ProbeKind kind) {
  switch (kind) {
    case roced::v1::PROBE_KIND_LATENCY: return "latency";
    case roced::v1::PROBE_KIND_BANDWIDTH: return "bandwidth";
    default: return "unspecified";
  }
}

namespace {

namespace pl = model::probe_limits;
constexpr uint32_t kMinLeaseSeconds = 1;
constexpr uint32_t kMaxLeaseSeconds = 600;
constexpr uint32_t kDefaultLeaseSeconds = 60;

const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  // One-way latency: microseconds on hardware, milliseconds on Soft-RoCE
  // or a congested fabric.
  static const auto* bounds = new prometheus::Histogram::BucketBoundaries{
      1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3,
      2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 0.1,  0.2,  0.5,  1};
  return *bounds;
}

std::string RandomId() {
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  uint64_t r = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ (counter.fetch_add(1) << 48);
  return absl::StrCat(absl::Hex(r, absl::kZeroPad16));
}

using util::FromProto;
using util::ToProto;

bool IsHostPort(const std::string& s) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= s.size()) return false;
  uint32_t port = 0;
  return absl::SimpleAtoi(s.substr(colon + 1), &port) && port > 0 && port < 65536;
}

void SetDeadline(grpc::ClientContext* ctx, absl::Duration timeout) {
  ctx->set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout));
}

}  // namespace

// One responder endpoint and the thread answering latency writes on it.
struct ProbeRuntime::Responder {
  std::string id;
  std::string initiator;
  roced::v1::ProbeKind kind = roced::v1::PROBE_KIND_UNSPECIFIED;
  std::unique_ptr<probe::Endpoint> endpoint;
  std::atomic<bool> stop{false};
  std::thread server;
  absl::Time expires;
};

ProbeRuntime::ProbeRuntime(Agent* agent, ProbeRuntimeOptions options)
    : agent_(agent), options_(std::move(options)), history_(options_.history_per_peer) {
  if (options_.name.empty()) options_.name = util::Hostname("roced");
  factory_ = options_.factory;
  auto& registry = *agent_->registry();
  latency_ = &prometheus::BuildHistogram()
                  .Name("roced_probe_latency_seconds")
                  .Help("One-way RDMA WRITE latency to a peer agent (half the round trip, as "
                        "ib_write_lat reports it); one observation per ping-pong sample.")
                  .Register(registry);
  bandwidth_ = &prometheus::BuildGauge()
                    .Name("roced_probe_bandwidth_bits_per_second")
                    .Help("RDMA WRITE bandwidth to a peer agent measured by the last successful "
                          "bandwidth probe (average over the probe, as ib_write_bw's BW average).")
                    .Register(registry);
  failures_ = &prometheus::BuildCounter()
                   .Name("roced_probe_failures_total")
                   .Help("Probes that failed, by peer and reason (peer_unavailable, "
                         "connect_timeout, timeout, wc_error:<status>, device_unavailable, ...).")
                   .Register(registry);
  last_success_ = &prometheus::BuildGauge()
                       .Name("roced_probe_last_success_timestamp_seconds")
                       .Help("Unix time at which the last successful probe of a peer and kind "
                             "finished.")
                       .Register(registry);
}

ProbeRuntime::~ProbeRuntime() { Stop(); }

void ProbeRuntime::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_ || stopped_) return;
  started_ = true;
  reaper_.Start();
  if (options_.schedule) scheduler_.Start();
}

void ProbeRuntime::Stop() {
  std::map<std::string, std::shared_ptr<Responder>> responders;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    stopping_.store(true);
    responders.swap(responders_);
  }
  reaper_.Stop();
  scheduler_.Stop();
  JoinFinishedWorkers(/*all=*/true);
  for (auto& [id, r] : responders) ReleaseResponder(r);
}

size_t ProbeRuntime::responder_endpoints() const {
  std::lock_guard<std::mutex> lock(mu_);
  return responders_.size();
}

absl::StatusOr<ProbeRuntime::LocalPort> ProbeRuntime::ResolveLocalPort() const {
  const roced::v1::NodeState state = agent_->State();
  const roced::v1::NodeConfig& config = state.config().desired();
  const std::string& wanted = config.probes().device();
  for (const auto& dev : state.devices()) {
    if (!wanted.empty() && dev.name() != wanted) continue;
    for (const auto& port : dev.ports()) {
      if (port.state() != roced::v1::PORT_STATE_ACTIVE || port.link_layer() != "Ethernet") continue;
      bool v2_ipv4 = false;
      for (const auto& gid : port.gids()) {
        if (gid.type() == roced::v1::GID_TYPE_ROCE_V2 && absl::StrContains(gid.ip_address(), '.')) {
          v2_ipv4 = true;
        }
      }
      if (!v2_ipv4) continue;
      LocalPort lp;
      lp.device = dev.name();
      lp.port = port.number();
      lp.netdev = port.netdev();
      lp.numa_node = dev.numa_node();
      for (const auto& hp : config.hugepages()) {
        if (model::HugepageSizeKb(hp.size()) == 2048 && hp.count() > 0 &&
            (!hp.has_numa_node() || static_cast<int>(hp.numa_node()) == dev.numa_node())) {
          lp.hugepages = true;
        }
      }
      // The lossless class of the probing interface, when the config sets
      // one (roce.default_tos).
      for (const auto& iface : config.interfaces()) {
        if (model::MatchesPort(iface.match(), dev, port) && iface.roce().has_default_tos()) {
          lp.default_tos = iface.roce().default_tos();
          lp.has_default_tos = true;
        }
      }
      return lp;
    }
  }
  return probe::ProbeError(
      absl::StatusCode::kFailedPrecondition, probe::kReasonDeviceUnavailable,
      wanted.empty() ? std::string("no active RoCE port with an IPv4 RoCE v2 GID")
                     : absl::StrCat("probes.device ", wanted,
                                    " has no active RoCE port with an IPv4 RoCE v2 GID"));
}

absl::StatusOr<ProbeRuntime::ProbeParams> ProbeRuntime::Params(
    const roced::v1::RunProbeRequest& request) const {
  const roced::v1::NodeState state = agent_->State();
  const roced::v1::ProbeConfig& pc = state.config().desired().probes();
  ProbeParams p;
  p.kind = request.kind() == roced::v1::PROBE_KIND_UNSPECIFIED ? roced::v1::PROBE_KIND_LATENCY
                                                               : request.kind();
  if (p.kind != roced::v1::PROBE_KIND_LATENCY && p.kind != roced::v1::PROBE_KIND_BANDWIDTH) {
    return absl::InvalidArgumentError(absl::StrCat("kind: unknown probe kind ", request.kind()));
  }
  if (request.peer().empty()) return absl::InvalidArgumentError("peer: required");
  for (const auto& peer : pc.peers()) {
    if (peer.name() == request.peer()) {
      p.peer = peer.name();
      p.address = peer.address();
    }
  }
  if (p.address.empty()) {
    if (!IsHostPort(request.peer())) {
      std::vector<std::string> names;
      for (const auto& peer : pc.peers()) names.push_back(peer.name());
      return absl::NotFoundError(absl::StrCat(
          "unknown peer '", request.peer(), "': not in probes.peers (",
          names.empty() ? "none configured" : absl::StrJoin(names, ", "),
          ") and not a host:port address"));
    }
    p.peer = request.peer();
    p.address = request.peer();
  }
  const bool latency = p.kind == roced::v1::PROBE_KIND_LATENCY;
  if (latency) {
    p.size = request.has_size() ? request.size()
                                : (pc.latency().has_size() ? pc.latency().size() : pl::kDefaultLatencySize);
    p.iterations = request.has_iterations()
                       ? request.iterations()
                       : (pc.latency().has_iterations() ? pc.latency().iterations() : pl::kDefaultIterations);
    if (p.size < 1 || p.size > pl::kMaxLatencySize) {
      return absl::InvalidArgumentError(
          absl::StrCat("size: ", p.size, " is out of range; allowed 1-", pl::kMaxLatencySize));
    }
    if (p.iterations < 1 || p.iterations > pl::kMaxIterations) {
      return absl::InvalidArgumentError(absl::StrCat(
          "iterations: ", p.iterations, " is out of range; allowed 1-", pl::kMaxIterations));
    }
    if (request.has_qps() && request.qps() != 1) {
      return absl::InvalidArgumentError("qps: latency probes use one queue pair");
    }
  } else {
    p.size = request.has_size() ? request.size()
                                : (pc.bandwidth().has_size() ? pc.bandwidth().size() : pl::kDefaultBandwidthSize);
    if (request.has_iterations()) {
      // A counted run: `duration` only bounds it (the longest allowed
      // unless the caller says otherwise).
      p.messages = request.iterations();
      if (p.messages < 1 || p.messages > pl::kMaxIterations) {
        return absl::InvalidArgumentError(absl::StrCat(
            "iterations: ", p.messages, " is out of range; allowed 1-", pl::kMaxIterations));
      }
    }
    p.duration = request.has_duration() ? FromProto(request.duration())
                 : p.messages > 0       ? pl::kMaxDuration
                 : pc.bandwidth().has_duration() ? FromProto(pc.bandwidth().duration())
                                                 : pl::kDefaultDuration;
    p.qps = request.has_qps() ? request.qps()
                              : (pc.bandwidth().has_qps() ? pc.bandwidth().qps() : pl::kDefaultQps);
    p.outstanding = pc.bandwidth().has_outstanding() ? pc.bandwidth().outstanding() : pl::kDefaultOutstanding;
    if (p.size < 1 || p.size > pl::kMaxSize) {
      return absl::InvalidArgumentError(
          absl::StrCat("size: ", p.size, " is out of range; allowed 1-", pl::kMaxSize));
    }
    if (p.duration < pl::kMinDuration || p.duration > pl::kMaxDuration) {
      return absl::InvalidArgumentError(
          absl::StrCat("duration: ", absl::FormatDuration(p.duration),
                       " is out of range; allowed 100ms to 30s"));
    }
    if (p.qps < 1 || p.qps > pl::kMaxQps) {
      return absl::InvalidArgumentError(
          absl::StrCat("qps: ", p.qps, " is out of range; allowed 1-", pl::kMaxQps));
    }
  }
  p.busy_poll = request.busy_poll();
  if (request.has_traffic_class()) {
    if (request.traffic_class() > 255) {
      return absl::InvalidArgumentError(absl::StrCat(
          "traffic_class: ", request.traffic_class(), " is out of range; allowed 0-255 (ToS)"));
    }
    p.traffic_class = request.traffic_class();
  } else if (pc.has_traffic_class()) {
    p.traffic_class = pc.traffic_class();
  }
  return p;
}

absl::StatusOr<roced::v1::ProbeResult> ProbeRuntime::RunProbe(
    const roced::v1::RunProbeRequest& request) {
  if (stopping_.load()) return absl::UnavailableError("agent is stopping");
  absl::StatusOr<ProbeParams> params = Params(request);
  if (!params.ok()) return params.status();
  const roced::v1::NodeState state = agent_->State();
  const roced::v1::ProbeConfig& pc = state.config().desired().probes();
  const uint32_t max_concurrent = pc.has_max_concurrent() ? pc.max_concurrent() : pl::kDefaultMaxConcurrent;
  absl::StatusOr<probe::ProbeLimiter::Slot> slot = limiter_.TryAcquire(params->kind, max_concurrent);
  if (!slot.ok()) return slot.status();
  roced::v1::ProbeResult result = Execute(*params);
  Record(result);
  return result;
}

std::shared_ptr<grpc::Channel> ProbeRuntime::Channel(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = channels_.find(address);
  if (it != channels_.end()) return it->second;
  // Addresses given directly to RunProbe could grow this without bound.
  if (channels_.size() >= 64) channels_.clear();
  grpc::ChannelArguments args;
  // A peer that comes back is probed again within seconds, not after
  // gRPC's default reconnect backoff of up to two minutes. (The minimum is
  // left alone: gRPC also uses it as the connect timeout, and a slow
  // handshake must not fail before open_timeout.)
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 500);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  channels_[address] = channel;
  return channel;
}

namespace {

// The peer's RDMA counters of `device` through its Agent.GetCounters; an
// error saying why when it does not answer or has none for the device.
absl::StatusOr<probe::CounterSnapshot> PeerCounters(const std::shared_ptr<grpc::Channel>& channel,
                                                    const std::string& device,
                                                    absl::Duration timeout) {
  probe::CounterSnapshot out;
  if (device.empty()) return absl::FailedPreconditionError("the peer named no RDMA device");
  auto stub = roced::v1::Agent::NewStub(channel);
  grpc::ClientContext ctx;
  SetDeadline(&ctx, timeout);
  roced::v1::GetCountersRequest req;
  req.set_device(device);
  roced::v1::GetCountersResponse resp;
  if (grpc::Status s = stub->GetCounters(&ctx, req, &resp); !s.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                        absl::StrCat("GetCounters: ", s.error_message()));
  }
  for (const auto& set : resp.sets()) {
    if (set.device() != device) continue;
    if (set.source() != "hw_counters" && set.source() != "counters") continue;
    const std::string prefix = set.source() == "counters" ? "counters/" : "";
    for (const auto& c : set.counters()) {
      out[prefix + (c.source_name().empty() ? c.name() : c.source_name())] = c.value();
    }
  }
  if (out.empty()) {
    return absl::NotFoundError(absl::StrCat("GetCounters: no RDMA counters for ", device));
  }
  return out;
}

}  // namespace

roced::v1::ProbeResult ProbeRuntime::Execute(const ProbeParams& params) {
  roced::v1::ProbeResult result;
  result.set_id(RandomId());
  result.set_peer(params.peer);
  result.set_kind(params.kind);
  result.set_size(params.size);
  if (params.kind == roced::v1::PROBE_KIND_LATENCY) result.set_iterations(params.iterations);
  if (params.messages > 0) result.set_iterations(static_cast<uint32_t>(params.messages));
  result.set_busy_poll(params.busy_poll);
  const absl::Time started = absl::Now();
  *result.mutable_started_at() = TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(started));

  auto finish = [&](const absl::Status& status) {
    result.set_success(status.ok());
    if (!status.ok()) {
      result.set_failure_reason(probe::ReasonOf(status));
      result.set_failure_detail(std::string(status.message()));
      if (absl::StartsWith(result.failure_reason(), "wc_error:")) result.set_wc_errors(1);
      if (result.failure_reason() == probe::kReasonTimeout ||
          result.failure_reason() == probe::kReasonConnectTimeout) {
        result.set_timeouts(1);
      }
    }
    *result.mutable_elapsed() = ToProto(absl::Now() - started);
    return result;
  };

  if (factory_ == nullptr) {
    return finish(probe::ProbeError(absl::StatusCode::kFailedPrecondition,
                                    probe::kReasonDeviceUnavailable,
                                    "probes need libibverbs on the live /sys"));
  }
  absl::StatusOr<LocalPort> local = ResolveLocalPort();
  if (!local.ok()) return finish(local.status());
  result.set_device(local->device);
  const bool latency = params.kind == roced::v1::PROBE_KIND_LATENCY;

  probe::EndpointSpec spec;
  spec.device = local->device;
  spec.port = local->port;
  spec.netdev = local->netdev;
  spec.numa_node = local->numa_node;
  spec.hugepages = local->hugepages;
  spec.kind = params.kind;
  spec.size = params.size;
  spec.qps = latency ? 1 : params.qps;
  spec.outstanding = latency ? 1 : (params.outstanding + spec.qps - 1) / spec.qps;
  spec.busy_poll = params.busy_poll;
  absl::StatusOr<std::unique_ptr<probe::Endpoint>> endpoint = factory_->Create(spec);
  if (!endpoint.ok()) return finish(endpoint.status());
  result.set_buffer_hugepages((*endpoint)->hugepages());
  const uint32_t traffic_class =
      params.traffic_class.has_value() ? *params.traffic_class
                                       : (local->has_default_tos ? local->default_tos : 0);

  const absl::Duration run_bound =
      latency ? options_.max_latency_run : 3 * params.duration + options_.completion_timeout;
  auto channel = Channel(params.address);
  auto peer = roced::v1::ProbePeer::NewStub(channel);
  roced::v1::OpenEndpointRequest open;
  open.set_initiator(options_.name);
  open.set_kind(params.kind);
  for (const auto& qp : (*endpoint)->local()) *open.add_initiator_qps() = qp;
  open.set_size(params.size);
  open.set_traffic_class(traffic_class);
  open.set_busy_poll(params.busy_poll);
  open.set_lease_seconds(static_cast<uint32_t>(
      std::min<int64_t>(kMaxLeaseSeconds, absl::ToInt64Seconds(run_bound) + 30)));
  roced::v1::OpenEndpointResponse opened;
  {
    grpc::ClientContext ctx;
    SetDeadline(&ctx, options_.open_timeout);
    grpc::Status s = peer->OpenEndpoint(&ctx, open, &opened);
    if (!s.ok()) {
      return finish(probe::WithReason(
          absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                       absl::StrCat("OpenEndpoint at ", params.address, ": ", s.error_message())),
          probe::PeerRpcReason(static_cast<absl::StatusCode>(s.error_code()))));
    }
  }
  // From here on the peer holds an endpoint for us: close it whatever
  // happens (its lease is the backstop if this call fails too).
  struct CloseOnExit {
    roced::v1::ProbePeer::Stub* stub;
    std::string id;
    absl::Duration timeout;
    ~CloseOnExit() {
      grpc::ClientContext ctx;
      SetDeadline(&ctx, timeout);
      roced::v1::CloseEndpointRequest req;
      req.set_endpoint_id(id);
      roced::v1::CloseEndpointResponse resp;
      grpc::Status s = stub->CloseEndpoint(&ctx, req, &resp);
      if (!s.ok()) {
        LOG_DEBUG << "probe: CloseEndpoint " << id << ": " << s.error_message()
                  << " (its lease will release it)";
      }
    }
  } close_on_exit{peer.get(), opened.endpoint_id(), options_.close_timeout};

  std::vector<roced::v1::QpEndpoint> remote(opened.responder_qps().begin(),
                                            opened.responder_qps().end());
  if (absl::Status s = (*endpoint)->Connect(remote, traffic_class); !s.ok()) return finish(s);

  const std::string& sysfs = agent_->options().paths.sysfs;
  const probe::CounterSnapshot local_before = probe::ReadPortCounters(sysfs, local->device, local->port);
  const absl::StatusOr<probe::CounterSnapshot> peer_before =
      PeerCounters(channel, opened.device(), options_.close_timeout);

  absl::Status run_status;
  if (latency) {
    probe::LatencyOptions lo;
    lo.iterations = params.iterations;
    lo.round_trip_timeout = options_.round_trip_timeout;
    lo.deadline = absl::Now() + options_.max_latency_run;
    absl::StatusOr<probe::LatencyRun> run = (*endpoint)->RunLatency(lo, &stopping_);
    if (run.ok()) {
      *result.mutable_latency() = probe::LatencyStatsFromRoundTrips(run->rtt_ns);
      double sum = 0;
      std::vector<double> increments =
          probe::LatencyBucketIncrements(run->rtt_ns, LatencyBuckets(), &sum);
      latency_->Add({{"peer", params.peer}, {"device", local->device}}, LatencyBuckets())
          .ObserveMultiple(increments, sum);
    }
    run_status = run.status();
  } else {
    probe::BandwidthOptions bo;
    bo.duration = params.duration;
    bo.messages = params.messages;
    bo.outstanding = params.outstanding;
    bo.completion_timeout = options_.completion_timeout;
    absl::StatusOr<probe::BandwidthRun> run = (*endpoint)->RunBandwidth(bo, &stopping_);
    if (run.ok()) {
      *result.mutable_bandwidth() = probe::BandwidthStatsFrom(run->bytes, run->messages,
                                                              run->elapsed, run->peak_bits_per_second);
      bandwidth_->Add({{"peer", params.peer}, {"device", local->device}})
          .Set(result.bandwidth().gbps() * 1e9);
    }
    run_status = run.status();
  }

  for (auto& d : probe::CounterDeltas(local_before,
                                      probe::ReadPortCounters(sysfs, local->device, local->port))) {
    *result.add_local_counter_deltas() = std::move(d);
  }
  if (!peer_before.ok()) {
    result.set_peer_counters_error(
        absl::StrCat("before the run: ", peer_before.status().message()));
  } else if (absl::StatusOr<probe::CounterSnapshot> peer_after =
                 PeerCounters(channel, opened.device(), options_.close_timeout);
             !peer_after.ok()) {
    result.set_peer_counters_error(absl::StrCat("after the run: ", peer_after.status().message()));
  } else {
    for (auto& d : probe::CounterDeltas(*peer_before, *peer_after)) {
      *result.add_peer_counter_deltas() = std::move(d);
    }
  }
  if (!result.peer_counters_error().empty()) {
    LOG_INFO << "probe to " << params.peer << ": no peer counter deltas: "
                << result.peer_counters_error();
  }
  return finish(run_status);
}

void ProbeRuntime::Record(const roced::v1::ProbeResult& result) {
  history_.Add(result);
  if (result.success()) {
    last_success_->Add({{"peer", result.peer()}, {"kind", ProbeKindName(result.kind())}})
        .Set(absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()));
  } else {
    failures_->Add({{"peer", result.peer()}, {"reason", result.failure_reason()}}).Increment();
    LOG_INFO << "probe " << ProbeKindName(result.kind()) << " to " << result.peer()
             << " failed: " << result.failure_reason() << ": " << result.failure_detail();
  }
}

std::vector<roced::v1::ProbeResult> ProbeRuntime::ListResults(
    const roced::v1::ListProbeResultsRequest& request) const {
  return history_.List(request.peer(), request.kind(), request.limit());
}

std::vector<roced::v1::ProbeSummary> ProbeRuntime::Summaries() const {
  return history_.Summaries();
}

absl::StatusOr<roced::v1::OpenEndpointResponse> ProbeRuntime::OpenEndpoint(
    const roced::v1::OpenEndpointRequest& request) {
  if (stopping_.load()) return absl::UnavailableError("agent is stopping");
  if (request.kind() != roced::v1::PROBE_KIND_LATENCY &&
      request.kind() != roced::v1::PROBE_KIND_BANDWIDTH) {
    return absl::InvalidArgumentError("kind: latency or bandwidth required");
  }
  if (request.initiator_qps_size() < 1 || request.initiator_qps_size() > static_cast<int>(pl::kMaxQps)) {
    return absl::InvalidArgumentError(absl::StrCat("initiator_qps: ", request.initiator_qps_size(),
                                                   " queue pairs; allowed 1-", pl::kMaxQps));
  }
  if (request.kind() == roced::v1::PROBE_KIND_LATENCY && request.initiator_qps_size() != 1) {
    return absl::InvalidArgumentError("initiator_qps: latency probes use one queue pair");
  }
  if (request.size() < 1 || request.size() > pl::kMaxSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("size: ", request.size(), " is out of range; allowed 1-", pl::kMaxSize));
  }
  if (request.traffic_class() > 255) {
    return absl::InvalidArgumentError("traffic_class: out of range; allowed 0-255");
  }
  for (int i = 0; i < request.initiator_qps_size(); ++i) {
    const auto& qp = request.initiator_qps(i);
    if (qp.gid().size() != 16 || qp.qpn() == 0 || qp.rkey() == 0 || qp.length() < request.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "initiator_qps[", i, "]: needs qpn, a 16-byte gid, rkey and a buffer of at least size "
          "bytes"));
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (responders_.size() >= options_.max_responder_endpoints) {
      return absl::ResourceExhaustedError(
          absl::StrCat(responders_.size(), " probe endpoints open; the limit is ",
                       options_.max_responder_endpoints));
    }
  }
  if (factory_ == nullptr) {
    return absl::FailedPreconditionError("probes need libibverbs on the live /sys");
  }
  absl::StatusOr<LocalPort> local = ResolveLocalPort();
  if (!local.ok()) return absl::FailedPreconditionError(local.status().message());

  probe::EndpointSpec spec;
  spec.device = local->device;
  spec.port = local->port;
  spec.netdev = local->netdev;
  spec.numa_node = local->numa_node;
  spec.hugepages = local->hugepages;
  spec.kind = request.kind();
  spec.size = request.size();
  spec.qps = static_cast<uint32_t>(request.initiator_qps_size());
  spec.outstanding = 1;  // the responder writes only to answer latency pings
  spec.busy_poll = request.busy_poll();
  absl::StatusOr<std::unique_ptr<probe::Endpoint>> endpoint = factory_->Create(spec);
  if (!endpoint.ok()) {
    const absl::StatusCode code = endpoint.status().code() == absl::StatusCode::kResourceExhausted
                                      ? absl::StatusCode::kResourceExhausted
                                      : absl::StatusCode::kFailedPrecondition;
    return absl::Status(code, endpoint.status().message());
  }
  std::vector<roced::v1::QpEndpoint> remote(request.initiator_qps().begin(),
                                            request.initiator_qps().end());
  if (absl::Status s = (*endpoint)->Connect(remote, request.traffic_class()); !s.ok()) {
    return absl::InvalidArgumentError(s.message());
  }

  auto responder = std::make_shared<Responder>();
  responder->id = RandomId();
  responder->initiator = request.initiator();
  responder->kind = request.kind();
  responder->endpoint = std::move(*endpoint);
  const uint32_t lease = std::clamp(
      request.lease_seconds() == 0 ? kDefaultLeaseSeconds : request.lease_seconds(),
      kMinLeaseSeconds, kMaxLeaseSeconds);
  responder->expires = absl::Now() + absl::Seconds(lease);

  roced::v1::OpenEndpointResponse response;
  response.set_endpoint_id(responder->id);
  response.set_device(responder->endpoint->device());
  for (const auto& qp : responder->endpoint->local()) *response.add_responder_qps() = qp;

  {
    std::lock_guard<std::mutex> lock(mu_);
    // Checked again: other opens ran while this one created its endpoint.
    if (stopped_) return absl::UnavailableError("agent is stopping");
    if (responders_.size() >= options_.max_responder_endpoints) {
      return absl::ResourceExhaustedError(
          absl::StrCat(responders_.size(), " probe endpoints open; the limit is ",
                       options_.max_responder_endpoints));
    }
    if (request.kind() == roced::v1::PROBE_KIND_LATENCY) {
      Responder* r = responder.get();
      r->server = std::thread([r] {
        absl::Status s = r->endpoint->ServeLatency(&r->stop);
        if (!s.ok()) {
          LOG_INFO << "probe endpoint " << r->id << " for " << r->initiator
                   << " stopped answering: " << probe::ReasonOf(s) << ": " << s.message();
        }
      });
    }
    responders_[responder->id] = responder;
  }
  LOG_DEBUG << "probe endpoint " << responder->id << " open for " << request.initiator() << " ("
            << ProbeKindName(request.kind()) << ", " << request.size() << " B, lease " << lease
            << " s)";
  return response;
}

void ProbeRuntime::ReleaseResponder(const std::shared_ptr<Responder>& responder) {
  responder->stop.store(true);
  if (responder->server.joinable()) responder->server.join();
  responder->endpoint.reset();
}

absl::Status ProbeRuntime::CloseEndpoint(const std::string& endpoint_id) {
  std::shared_ptr<Responder> responder;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = responders_.find(endpoint_id);
    if (it == responders_.end()) {
      return absl::NotFoundError(
          absl::StrCat("no probe endpoint '", endpoint_id, "' (closed, or its lease expired)"));
    }
    responder = it->second;
    responders_.erase(it);
  }
  ReleaseResponder(responder);
  return absl::OkStatus();
}

void ProbeRuntime::ReapExpired() {
  std::vector<std::shared_ptr<Responder>> expired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    const absl::Time now = absl::Now();
    for (auto it = responders_.begin(); it != responders_.end();) {
      if (it->second->expires <= now) {
        expired.push_back(it->second);
        it = responders_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& r : expired) {
    LOG_INFO << "probe endpoint " << r->id << " for " << r->initiator
             << ": lease expired without CloseEndpoint; released";
    ReleaseResponder(r);
  }
}

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
  return std::clamp(schedule_.NextDue() - absl::Now(), absl::ZeroDuration(), absl::Seconds(1));
}

void ProbeRuntime::RunDueProbes() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
  }
  JoinFinishedWorkers(/*all=*/false);
  const roced::v1::ProbeConfig pc = agent_->State().config().desired().probes();
  std::vector<std::string> peers;
  for (const auto& peer : pc.peers()) peers.push_back(peer.name());
  const absl::Time now = absl::Now();
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
    absl::StatusOr<ProbeParams> params = Params(request);
    if (!params.ok()) {
      LOG_WARNING << "scheduled " << ProbeKindName(key.kind) << " probe to " << key.peer << ": "
                  << params.status().message();
      schedule_.Started(key, now);
      continue;
    }
    absl::StatusOr<probe::ProbeLimiter::Slot> slot =
        limiter_.TryAcquire(key.kind, pc.has_max_concurrent() ? pc.max_concurrent() : pl::kDefaultMaxConcurrent);
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
      Record(Execute(p));
      held->Release();
      done->store(true);
    });
    std::lock_guard<std::mutex> lock(workers_mu_);
    workers_.push_back(Worker{std::move(t), done});
  }
}

}  // namespace roced::agent

#include "probe/initiator.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/time_util.h"
#include "probe/gid.h"
#include "probe/random_id.h"
#include "probe/reason.h"
#include "probe/stats.h"
#include "util/log.h"
#include "util/proto_time.h"
#include "util/status_macros.h"

namespace roced::probe {

// One probe's local endpoint and, once OpenEndpoint answered, the peer's.
struct Initiator::Session {
  LocalPort local;
  std::unique_ptr<Endpoint> endpoint;
  uint32_t traffic_class = 0;
  std::string address;
  roced::v1::OpenEndpointResponse opened;
  bool peer_open = false;  // the peer holds an endpoint for this probe
};

namespace {

roced::v1::ProbeResult NewResult(const ProbeParams& params, absl::Time started) {
  roced::v1::ProbeResult result;
  result.set_id(RandomId());
  result.set_peer(params.peer);
  result.set_kind(params.kind);
  result.set_size(params.size);
  if (params.kind == roced::v1::PROBE_KIND_LATENCY) result.set_iterations(params.iterations);
  if (params.messages > 0) result.set_iterations(static_cast<uint32_t>(params.messages));
  result.set_busy_poll(params.busy_poll);
  *result.mutable_started_at() =
      google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(started));
  return result;
}

// Success or the failure's reason, detail and counts; the elapsed time.
void Finish(const absl::Status& status, absl::Time started, roced::v1::ProbeResult* result) {
  result->set_success(status.ok());
  if (!status.ok()) {
    result->set_failure_reason(ReasonOf(status));
    result->set_failure_detail(std::string(status.message()));
    if (absl::StartsWith(result->failure_reason(), "wc_error:")) result->set_wc_errors(1);
    if (result->failure_reason() == kReasonTimeout ||
        result->failure_reason() == kReasonConnectTimeout) {
      result->set_timeouts(1);
    }
  }
  *result->mutable_elapsed() = util::ToProto(absl::Now() - started);
}

}  // namespace

namespace {
// The IPv4 address of the responder's (first) GID; RoCE v2 GIDs the engine
// selects are IPv4-mapped.
std::string PeerDataIp(const std::vector<roced::v1::QpEndpoint>& remote) {
  if (remote.empty() || remote[0].gid().size() != 16) return "";
  std::array<uint8_t, 16> gid{};
  std::copy(remote[0].gid().begin(), remote[0].gid().end(), gid.begin());
  return Ipv4OfGid(gid);
}
}  // namespace

Initiator::Initiator(InitiatorOptions options, EndpointFactory* factory, PeerClient* peers,
                     LocalPortFn local_port)
    : options_(std::move(options)),
      factory_(factory),
      peers_(peers),
      local_port_(std::move(local_port)) {}

InitiatorRun Initiator::Run(const ProbeParams& params, const std::atomic<bool>* cancel) const {
  InitiatorRun run;
  const absl::Time started = absl::Now();
  run.result = NewResult(params, started);
  Session session;
  const absl::Status status = Drive(params, cancel, &session, &run);
  // The elapsed time ends with the run; closing the peer's endpoint and
  // releasing the local one (when `session` goes) are not part of it.
  Finish(status, started, &run.result);
  if (session.peer_open) ClosePeer(session);
  return run;
}

absl::Status Initiator::Drive(const ProbeParams& params, const std::atomic<bool>* cancel,
                              Session* session, InitiatorRun* run) const {
  roced::v1::ProbeResult& result = run->result;
  RETURN_IF_ERROR(CreateLocal(params, session, &result));
  RETURN_IF_ERROR(OpenPeer(params, session));
  std::vector<roced::v1::QpEndpoint> remote(session->opened.responder_qps().begin(),
                                            session->opened.responder_qps().end());
  result.set_peer_data_ip(PeerDataIp(remote));
  RETURN_IF_ERROR(session->endpoint->Connect(remote, session->traffic_class));

  const LocalPort& local = session->local;
  const CounterSnapshot local_before = ReadPortCounters(options_.sysfs_root, local.device, local.port);
  const absl::StatusOr<CounterSnapshot> peer_before = PeerCounters(*session);
  const absl::Status run_status = RunTraffic(params, cancel, session, run);

  for (auto& d : CounterDeltas(local_before,
                               ReadPortCounters(options_.sysfs_root, local.device, local.port))) {
    *result.add_local_counter_deltas() = std::move(d);
  }
  if (!peer_before.ok()) {
    result.set_peer_counters_error(absl::StrCat("before the run: ", peer_before.status().message()));
  } else if (absl::StatusOr<CounterSnapshot> peer_after = PeerCounters(*session); !peer_after.ok()) {
    result.set_peer_counters_error(absl::StrCat("after the run: ", peer_after.status().message()));
  } else {
    for (auto& d : CounterDeltas(*peer_before, *peer_after)) {
      *result.add_peer_counter_deltas() = std::move(d);
    }
  }
  if (!result.peer_counters_error().empty()) {
    LOG_INFO << "probe to " << params.peer << ": no peer counter deltas: "
             << result.peer_counters_error();
  }
  return run_status;
}

absl::Status Initiator::CreateLocal(const ProbeParams& params, Session* session,
                                    roced::v1::ProbeResult* result) const {
  if (factory_ == nullptr) {
    return ProbeError(absl::StatusCode::kFailedPrecondition, kReasonDeviceUnavailable,
                      kNoEngineMessage);
  }
  absl::StatusOr<LocalPort> local = local_port_();
  if (!local.ok()) return local.status();
  session->local = *local;
  result->set_device(local->device);
  const bool latency = params.kind == roced::v1::PROBE_KIND_LATENCY;
  EndpointSpec spec = SpecOn(*local);
  spec.kind = params.kind;
  spec.size = params.size;
  spec.qps = latency ? 1 : params.qps;
  spec.outstanding = latency ? 1 : (params.outstanding + spec.qps - 1) / spec.qps;
  spec.busy_poll = params.busy_poll;
  absl::StatusOr<std::unique_ptr<Endpoint>> endpoint = factory_->Create(spec);
  if (!endpoint.ok()) return endpoint.status();
  session->endpoint = std::move(*endpoint);
  result->set_buffer_hugepages(session->endpoint->hugepages());
  session->traffic_class = params.traffic_class.has_value()
                               ? *params.traffic_class
                               : (local->has_default_tos ? local->default_tos : 0);
  return absl::OkStatus();
}

absl::Status Initiator::OpenPeer(const ProbeParams& params, Session* session) const {
  const bool latency = params.kind == roced::v1::PROBE_KIND_LATENCY;
  const absl::Duration run_bound =
      latency ? options_.max_latency_run : 3 * params.duration + options_.completion_timeout;
  roced::v1::OpenEndpointRequest open;
  open.set_initiator(options_.name);
  open.set_kind(params.kind);
  for (const auto& qp : session->endpoint->local()) *open.add_initiator_qps() = qp;
  open.set_size(params.size);
  open.set_traffic_class(session->traffic_class);
  open.set_busy_poll(params.busy_poll);
  open.set_lease_seconds(static_cast<uint32_t>(
      std::min<int64_t>(kMaxLeaseSeconds, absl::ToInt64Seconds(run_bound) + 30)));
  absl::StatusOr<roced::v1::OpenEndpointResponse> opened =
      peers_->OpenEndpoint(params.address, open, absl::Now() + options_.open_timeout);
  if (!opened.ok()) {
    const absl::StatusCode code = opened.status().code();
    return WithReason(absl::Status(code, absl::StrCat("OpenEndpoint at ", params.address, ": ",
                                                      opened.status().message())),
                      PeerRpcReason(code));
  }
  // From here on the peer holds an endpoint for us: Run closes it whatever
  // happens (its lease is the backstop if that fails too).
  session->address = params.address;
  session->opened = *std::move(opened);
  session->peer_open = true;
  return absl::OkStatus();
}

absl::Status Initiator::RunTraffic(const ProbeParams& params, const std::atomic<bool>* cancel,
                                   Session* session, InitiatorRun* run) const {
  if (params.kind == roced::v1::PROBE_KIND_LATENCY) {
    LatencyOptions lo;
    lo.iterations = params.iterations;
    lo.round_trip_timeout = options_.round_trip_timeout;
    lo.deadline = absl::Now() + options_.max_latency_run;
    absl::StatusOr<LatencyRun> latency = session->endpoint->RunLatency(lo, cancel);
    if (!latency.ok()) return latency.status();
    *run->result.mutable_latency() = LatencyStatsFromRoundTrips(latency->rtt_ns);
    run->rtt_ns = std::move(latency->rtt_ns);
    return absl::OkStatus();
  }
  BandwidthOptions bo;
  bo.duration = params.duration;
  bo.messages = params.messages;
  bo.outstanding = params.outstanding;
  bo.completion_timeout = options_.completion_timeout;
  absl::StatusOr<BandwidthRun> bandwidth = session->endpoint->RunBandwidth(bo, cancel);
  if (!bandwidth.ok()) return bandwidth.status();
  *run->result.mutable_bandwidth() =
      BandwidthStatsFrom(bandwidth->bytes, bandwidth->messages, bandwidth->elapsed,
                         bandwidth->peak_bits_per_second);
  return absl::OkStatus();
}

// The peer's RDMA counters of its endpoint's device through its
// Agent.GetCounters; an error saying why when it does not answer or has
// none for the device.
absl::StatusOr<CounterSnapshot> Initiator::PeerCounters(const Session& session) const {
  const std::string& device = session.opened.device();
  if (device.empty()) return absl::FailedPreconditionError("the peer named no RDMA device");
  roced::v1::GetCountersRequest request;
  request.set_device(device);
  absl::StatusOr<roced::v1::GetCountersResponse> response =
      peers_->GetCounters(session.address, request, absl::Now() + options_.close_timeout);
  if (!response.ok()) {
    return absl::Status(response.status().code(),
                        absl::StrCat("GetCounters: ", response.status().message()));
  }
  return PeerCounterSnapshot(*response, device);
}

void Initiator::ClosePeer(const Session& session) const {
  roced::v1::CloseEndpointRequest request;
  request.set_endpoint_id(session.opened.endpoint_id());
  absl::StatusOr<roced::v1::CloseEndpointResponse> closed =
      peers_->CloseEndpoint(session.address, request, absl::Now() + options_.close_timeout);
  if (!closed.ok()) {
    LOG_DEBUG << "probe: CloseEndpoint " << request.endpoint_id() << ": "
              << closed.status().message() << " (its lease will release it)";
  }
}

}  // namespace roced::probe

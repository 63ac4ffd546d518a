#include "probe/params.h"

#include <algorithm>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/match.h"
#include "model/probe_limits.h"
#include "model/validate.h"
#include "probe/reason.h"
#include "util/ip_subnet.h"
#include "util/proto_time.h"

namespace roced::probe {

EndpointSpec SpecOn(const LocalPort& port) {
  EndpointSpec spec;
  spec.device = port.device;
  spec.port = port.port;
  spec.netdev = port.netdev;
  spec.numa_node = port.numa_node;
  spec.hugepages = port.hugepages;
  return spec;
}

namespace {

namespace pl = model::probe_limits;
using util::FromProto;

// The peer's name and address: a probes.peers entry, else a host:port.
absl::Status ResolvePeer(const roced::v1::RunProbeRequest& request,
                         const roced::v1::ProbeConfig& pc, ProbeParams* p) {
  if (request.peer().empty()) return absl::InvalidArgumentError("peer: required");
  for (const auto& peer : pc.peers()) {
    if (peer.name() == request.peer()) {
      p->peer = peer.name();
      p->address = peer.address();
    }
  }
  if (!p->address.empty()) return absl::OkStatus();
  if (!util::IsHostPort(request.peer())) {
    std::vector<std::string> names;
    for (const auto& peer : pc.peers()) names.push_back(peer.name());
    return absl::NotFoundError(absl::StrCat(
        "unknown peer '", request.peer(), "': not in probes.peers (",
        names.empty() ? "none configured" : absl::StrJoin(names, ", "),
        ") and not a host:port address"));
  }
  p->peer = request.peer();
  p->address = request.peer();
  return absl::OkStatus();
}

absl::Status ResolveLatency(const roced::v1::RunProbeRequest& request,
                            const roced::v1::ProbeConfig& pc, ProbeParams* p) {
  p->size = request.has_size()
                ? request.size()
                : (pc.latency().has_size() ? pc.latency().size() : pl::kDefaultLatencySize);
  p->iterations = request.has_iterations() ? request.iterations()
                  : pc.latency().has_iterations() ? pc.latency().iterations()
                                                  : pl::kDefaultIterations;
  if (p->size < 1 || p->size > pl::kMaxLatencySize) {
    return absl::InvalidArgumentError(
        absl::StrCat("size: ", p->size, " is out of range; allowed 1-", pl::kMaxLatencySize));
  }
  if (p->iterations < 1 || p->iterations > pl::kMaxIterations) {
    return absl::InvalidArgumentError(absl::StrCat(
        "iterations: ", p->iterations, " is out of range; allowed 1-", pl::kMaxIterations));
  }
  if (request.has_qps() && request.qps() != 1) {
    return absl::InvalidArgumentError("qps: latency probes use one queue pair");
  }
  return absl::OkStatus();
}

absl::Status ResolveBandwidth(const roced::v1::RunProbeRequest& request,
                              const roced::v1::ProbeConfig& pc, ProbeParams* p) {
  p->size = request.has_size()
                ? request.size()
                : (pc.bandwidth().has_size() ? pc.bandwidth().size() : pl::kDefaultBandwidthSize);
  if (request.has_iterations()) {
    // A counted run: `duration` only bounds it (the longest allowed
    // unless the caller says otherwise).
    p->messages = request.iterations();
    if (p->messages < 1 || p->messages > pl::kMaxIterations) {
      return absl::InvalidArgumentError(absl::StrCat(
          "iterations: ", p->messages, " is out of range; allowed 1-", pl::kMaxIterations));
    }
  }
  p->duration = request.has_duration()         ? FromProto(request.duration())
                : p->messages > 0              ? pl::kMaxDuration
                : pc.bandwidth().has_duration() ? FromProto(pc.bandwidth().duration())
                                                : pl::kDefaultDuration;
  p->qps = request.has_qps() ? request.qps()
                             : (pc.bandwidth().has_qps() ? pc.bandwidth().qps() : pl::kDefaultQps);
  p->outstanding =
      pc.bandwidth().has_outstanding() ? pc.bandwidth().outstanding() : pl::kDefaultOutstanding;
  if (p->size < 1 || p->size > pl::kMaxSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("size: ", p->size, " is out of range; allowed 1-", pl::kMaxSize));
  }
  if (p->duration < pl::kMinDuration || p->duration > pl::kMaxDuration) {
    return absl::InvalidArgumentError(absl::StrCat("duration: ", absl::FormatDuration(p->duration),
                                                   " is out of range; allowed 100ms to 30s"));
  }
  if (p->qps < 1 || p->qps > pl::kMaxQps) {
    return absl::InvalidArgumentError(
        absl::StrCat("qps: ", p->qps, " is out of range; allowed 1-", pl::kMaxQps));
  }
  return absl::OkStatus();
}

// Whether `port` can carry probes: active, Ethernet, an IPv4 RoCE v2 GID.
bool Probeable(const roced::v1::Port& port) {
  if (port.state() != roced::v1::PORT_STATE_ACTIVE || port.link_layer() != "Ethernet") return false;
  for (const auto& gid : port.gids()) {
    if (IsRoceV2Ipv4Gid(gid)) return true;
  }
  return false;
}

LocalPort LocalPortOf(const roced::v1::NodeConfig& config, const roced::v1::RdmaDevice& dev,
                      const roced::v1::Port& port) {
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
  // The lossless class of the probing interface, when the config sets one
  // (roce.default_tos).
  for (const auto& iface : config.interfaces()) {
    if (model::MatchesPort(iface.match(), dev, port) && iface.roce().has_default_tos()) {
      lp.default_tos = iface.roce().default_tos();
      lp.has_default_tos = true;
    }
  }
  return lp;
}

}  // namespace

absl::StatusOr<ProbeParams> ResolveParams(const roced::v1::RunProbeRequest& request,
                                          const roced::v1::ProbeConfig& pc) {
  ProbeParams p;
  p.kind = request.kind() == roced::v1::PROBE_KIND_UNSPECIFIED ? roced::v1::PROBE_KIND_LATENCY
                                                               : request.kind();
  if (p.kind != roced::v1::PROBE_KIND_LATENCY && p.kind != roced::v1::PROBE_KIND_BANDWIDTH) {
    return absl::InvalidArgumentError(absl::StrCat("kind: unknown probe kind ", request.kind()));
  }
  if (absl::Status s = ResolvePeer(request, pc, &p); !s.ok()) return s;
  absl::Status kind_status = p.kind == roced::v1::PROBE_KIND_LATENCY
                                 ? ResolveLatency(request, pc, &p)
                                 : ResolveBandwidth(request, pc, &p);
  if (!kind_status.ok()) return kind_status;
  p.busy_poll = request.busy_poll();
  if (request.has_traffic_class()) {
    if (request.traffic_class() > pl::kMaxTrafficClass) {
      return absl::InvalidArgumentError(absl::StrCat(
          "traffic_class: ", request.traffic_class(), " is out of range; allowed 0-", pl::kMaxTrafficClass, " (ToS)"));
    }
    p.traffic_class = request.traffic_class();
  } else if (pc.has_traffic_class()) {
    p.traffic_class = pc.traffic_class();
  }
  return p;
}

uint32_t MaxConcurrent(const roced::v1::ProbeConfig& config) {
  return config.has_max_concurrent() ? config.max_concurrent() : pl::kDefaultMaxConcurrent;
}

absl::StatusOr<LocalPort> ResolveLocalPort(const roced::v1::NodeState& state) {
  const roced::v1::NodeConfig& config = state.config().desired();
  const std::string& wanted = config.probes().device();
  for (const auto& dev : state.devices()) {
    if (!wanted.empty() && dev.name() != wanted) continue;
    for (const auto& port : dev.ports()) {
      if (Probeable(port)) return LocalPortOf(config, dev, port);
    }
  }
  return ProbeError(
      absl::StatusCode::kFailedPrecondition, kReasonDeviceUnavailable,
      wanted.empty() ? std::string("no active RoCE port with an IPv4 RoCE v2 GID")
                     : absl::StrCat("probes.device ", wanted,
                                    " has no active RoCE port with an IPv4 RoCE v2 GID"));
}

absl::Status ValidateOpenRequest(const roced::v1::OpenEndpointRequest& request) {
  if (request.kind() != roced::v1::PROBE_KIND_LATENCY &&
      request.kind() != roced::v1::PROBE_KIND_BANDWIDTH) {
    return absl::InvalidArgumentError("kind: latency or bandwidth required");
  }
  if (request.initiator_qps_size() < 1 ||
      request.initiator_qps_size() > static_cast<int>(pl::kMaxQps)) {
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
  if (request.traffic_class() > pl::kMaxTrafficClass) {
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
  return absl::OkStatus();
}

uint32_t LeaseSeconds(uint32_t requested) {
  return std::clamp(requested == 0 ? kDefaultLeaseSeconds : requested, kMinLeaseSeconds,
                    kMaxLeaseSeconds);
}

const char* ProbeKindName(roced::v1::ProbeKind kind) {
  switch (kind) {
    case roced::v1::PROBE_KIND_LATENCY: return "latency";
    case roced::v1::PROBE_KIND_BANDWIDTH: return "bandwidth";
    default: return "unspecified";
  }
}

bool IsRoceV2Ipv4Gid(const roced::v1::Gid& gid) {
  return gid.type() == roced::v1::GID_TYPE_ROCE_V2 && absl::StrContains(gid.ip_address(), '.');
}

}  // namespace roced::probe

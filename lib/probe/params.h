// From requests to what a probe runs with: RunProbe requests resolved
// against the config's `probes:` section (defaults, limits, the peer's
// address), the local RDMA port probes use, and the checks of a peer's
// OpenEndpoint request. Defaults and limits are model/probe_limits.h's.
//
// All functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "probe/endpoint.h"
#include "roced/v1/agent.pb.h"
#include "roced/v1/config.pb.h"
#include "roced/v1/peer.pb.h"
#include "roced/v1/state.pb.h"

namespace roced::probe {

// Responder leases (OpenEndpointRequest.lease_seconds): 0 asks for the
// default; others are clamped to [min, max].
inline constexpr uint32_t kMinLeaseSeconds = 1;
// The longest run an initiator asks a lease for is a 120 s latency run
// (+30 s); bandwidth runs are shorter (3 x 30 s + 5 s). Endpoints of a
// vanished initiator are gone within these.
inline constexpr uint32_t kMaxLeaseSeconds = 180;
inline constexpr uint32_t kDefaultLeaseSeconds = 30;

// Why a node without an endpoint factory cannot probe (probes fail with
// device_unavailable, OpenEndpoint with FAILED_PRECONDITION).
inline constexpr char kNoEngineMessage[] = "probes need libibverbs on the live /sys";

// The RDMA port this node probes from and answers on.
struct LocalPort {
  std::string device;
  uint32_t port = 0;
  std::string netdev;
  int numa_node = -1;
  bool hugepages = false;  // the config reserves 2 MiB pages for it
  uint32_t default_tos = 0;
  bool has_default_tos = false;
};

// An endpoint spec on `port` (device, port, netdev, NUMA node, hugepages);
// the caller adds the kind, sizes and queue pairs.
EndpointSpec SpecOn(const LocalPort& port);

// Where the local port is looked up, at each probe and each open (the
// node's devices and config change between them). Must be thread-safe.
using LocalPortFn = std::function<absl::StatusOr<LocalPort>()>;

// One probe, resolved: what the initiator runs.
struct ProbeParams {
  std::string peer;     // name in results and metrics
  std::string address;  // host:port of the peer agent
  roced::v1::ProbeKind kind = roced::v1::PROBE_KIND_LATENCY;
  uint32_t size = 0;
  uint32_t iterations = 0;
  absl::Duration duration;
  uint32_t qps = 1;
  uint32_t outstanding = 128;
  // Bandwidth: a counted run of this many messages (0: timed).
  uint64_t messages = 0;
  bool busy_poll = false;
  std::optional<uint32_t> traffic_class;
};

// Fills a RunProbe request's defaults from `config` (then probe_limits)
// and validates it: INVALID_ARGUMENT naming the field and its range;
// NOT_FOUND for a peer that is neither in `config.peers` (the message lists
// them) nor a host:port address.
absl::StatusOr<ProbeParams> ResolveParams(const roced::v1::RunProbeRequest& request,
                                          const roced::v1::ProbeConfig& config);

// probes.max_concurrent, or its default.
uint32_t MaxConcurrent(const roced::v1::ProbeConfig& config);

// The first active Ethernet port with an IPv4 RoCE v2 GID (of
// probes.device when the desired config names one), with its hugepage
// reservation and the matching interface's roce.default_tos.
// FAILED_PRECONDITION with reason device_unavailable when there is none.
absl::StatusOr<LocalPort> ResolveLocalPort(const roced::v1::NodeState& state);

// Whether `gid` is a RoCE v2 GID of an IPv4 address: what a probe (RC or
// the mesh's) addresses a port by.
bool IsRoceV2Ipv4Gid(const roced::v1::Gid& gid);

// The responder's checks of an OpenEndpoint request (kind, queue pair
// count and fields, size, traffic class): INVALID_ARGUMENT saying which.
absl::Status ValidateOpenRequest(const roced::v1::OpenEndpointRequest& request);

// The lease a responder grants for `requested` seconds (0: the default).
uint32_t LeaseSeconds(uint32_t requested);

// The kind's name in metrics, results and the CLI ("latency", "bandwidth").
const char* ProbeKindName(roced::v1::ProbeKind kind);

}  // namespace roced::probe

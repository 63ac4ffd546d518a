// The probe engine's view of one side of an RDMA connection: a set of RC
// queue pairs with their completion queue and one registered buffer, plus
// the traffic patterns run over them. The verbs implementation
// (verbs_endpoint.h) is what the agent uses; tests substitute a fake
// factory where no RDMA device exists.
//
// An endpoint is created by an EndpointFactory, connected once to the
// remote side's QpEndpoints, then used for any number of runs (the buffer
// registration is reused; the latency sequence continues across runs).
// Destroying it releases every verbs resource it holds.
//
// Threads: an endpoint is used by one thread at a time, except that
// `cancel` flags may be set from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "roced/v1/peer.pb.h"
#include "roced/v1/state.pb.h"

namespace roced::probe {

// What the endpoint is for and where it lives.
struct EndpointSpec {
  std::string device;  // RDMA device, e.g. "rxe0"
  uint32_t port = 1;
  // Netdev the GID must belong to (empty: any), and optionally the IPv4
  // address it must stand for (empty: the port's first IPv4 RoCE v2 GID).
  std::string netdev;
  std::string ipv4;
  roced::v1::ProbeKind kind = roced::v1::PROBE_KIND_LATENCY;
  // Message size in bytes (>= 1). The registered buffer holds a receive
  // area and a send area of this size.
  uint32_t size = 2;
  uint32_t qps = 1;
  // Send queue depth per QP (work requests in flight).
  uint32_t outstanding = 1;
  // The device's NUMA node (-1: unknown): the buffer's pages are placed
  // there when possible.
  int numa_node = -1;
  // Map the buffer with 2 MiB hugepages (MAP_HUGETLB) when the node's pool
  // has a free page; normal pages otherwise.
  bool hugepages = false;
  // Poll completions and the buffer without ever yielding or sleeping (as
  // perftest does); otherwise spin 2 ms, then yield, then sleep 50 us steps.
  bool busy_poll = false;
};

struct LatencyOptions {
  uint32_t iterations = 1000;
  // The longest one round trip may take before the run fails with
  // "timeout" ("connect_timeout" when it is the first one).
  absl::Duration round_trip_timeout = absl::Seconds(2);
  // The whole run fails with "timeout" past this point.
  absl::Time deadline = absl::InfiniteFuture();
};

struct LatencyRun {
  std::vector<int64_t> rtt_ns;  // one per iteration, in order
};

struct BandwidthOptions {
  // Timed run: bytes completed within `duration` count (ib_write_bw -D).
  absl::Duration duration = absl::Seconds(2);
  // Counted run when > 0: exactly this many messages are written and all
  // count (ib_write_bw -n); `duration` then bounds how long posting them
  // may take (beyond it the run fails with "timeout").
  uint64_t messages = 0;
  // Work requests kept in flight across all QPs.
  uint32_t outstanding = 128;
  // The longest wait for any completion (a stall fails the run). Writes
  // still in flight when `duration` ends may take up to 2 x duration plus
  // this to drain; they are not counted.
  absl::Duration completion_timeout = absl::Seconds(5);
  // Shortest window over which the peak rate is measured (a window also
  // spans at least four completions).
  absl::Duration peak_window = absl::Milliseconds(100);
};

// What completed within the duration; `elapsed` runs from the first post
// to the last of those completions (ib_write_bw's definition).
struct BandwidthRun {
  uint64_t bytes = 0;
  uint64_t messages = 0;
  absl::Duration elapsed;
  double peak_bits_per_second = 0;
};

class Endpoint {
 public:
  virtual ~Endpoint() = default;

  // The local queue pairs as the remote side needs them (QPN, PSN, GID,
  // buffer address, rkey, active MTU).
  virtual const std::vector<roced::v1::QpEndpoint>& local() const = 0;
  virtual const std::string& device() const = 0;
  // Whether the registered buffer sits on hugepages.
  virtual bool hugepages() const { return false; }

  // Brings every QP to RTS against the matching `remote` entry (same
  // count as local()). The path MTU is the smaller of both active MTUs;
  // `traffic_class` is the GRH traffic class (ToS byte).
  virtual absl::Status Connect(const std::vector<roced::v1::QpEndpoint>& remote,
                               uint32_t traffic_class) = 0;

  // Initiator: RDMA WRITE ping-pong like ib_write_lat: write to the peer,
  // wait until the peer's write lands in the local buffer, repeat. Needs
  // the peer to run ServeLatency. Stops early with "cancelled" when
  // `*cancel` turns true.
  virtual absl::StatusOr<LatencyRun> RunLatency(const LatencyOptions& options,
                                                const std::atomic<bool>* cancel) = 0;

  // Responder side of RunLatency: answers each write that lands in the
  // local buffer with a write back, until `*stop` turns true. Returns OK
  // when stopped, or the error that ended it: a failed write back, or
  // DEADLINE_EXCEEDED (reason "timeout") when no write lands for `idle`
  // (the initiator died or was cut off without closing the endpoint; a
  // live one pings without pause from connect to close).
  virtual absl::Status ServeLatency(const std::atomic<bool>* stop, absl::Duration idle) = 0;

  // Initiator: streaming RDMA WRITE like ib_write_bw, for
  // `options.duration`. The responder does nothing (one-sided writes).
  virtual absl::StatusOr<BandwidthRun> RunBandwidth(const BandwidthOptions& options,
                                                    const std::atomic<bool>* cancel) = 0;
};

class EndpointFactory {
 public:
  virtual ~EndpointFactory() = default;
  // Creates an endpoint (QPs in RESET/INIT, buffer registered). Errors
  // carry a probe reason (device_unavailable, no_gid, local_error).
  virtual absl::StatusOr<std::unique_ptr<Endpoint>> Create(const EndpointSpec& spec) = 0;
};

}  // namespace roced::probe

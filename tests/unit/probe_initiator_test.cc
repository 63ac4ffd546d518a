// The initiator, one probe start to end, driven through a fake peer client
// and fake endpoints (no gRPC, no RDMA device): what it asks the peer for,
// what it connects to, the result of a successful latency and bandwidth
// run, and every failure as a result with a reason: the peer down or
// refusing, a connect timeout, a work completion error, a close that
// fails, cancellation.
#include "probe/initiator.h"

#include <infiniband/verbs.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "fake_probe_for_test.h"
#include "probe/history.h"
#include "probe/reason.h"

namespace roced::probe {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kPeerAddress[] = "10.0.0.2:7471";

// A sysfs root with one port's hw_counters and counters files, which a
// test may move during a run.
class CounterTree {
 public:
  CounterTree() {
    root_ = (std::filesystem::temp_directory_path() /
             absl::StrCat("probe-initiator-", getpid(), "-", ++serial_))
                .string();
    Set("hw_counters", "np_cnp_sent", 10);
    Set("hw_counters", "out_of_sequence", 3);
    Set("counters", "port_xmit_data", 1000);
  }
  ~CounterTree() { std::filesystem::remove_all(root_); }
  void Set(const std::string& dir, const std::string& name, uint64_t value) {
    const std::string d = absl::StrCat(root_, "/class/infiniband/mlx5_0/ports/1/", dir);
    std::filesystem::create_directories(d);
    std::ofstream(d + "/" + name) << value << "\n";
  }
  const std::string& root() const { return root_; }

 private:
  static inline int serial_ = 0;
  std::string root_;
};

roced::v1::GetCountersResponse PeerCounters(const std::string& device, uint64_t retransmits) {
  roced::v1::GetCountersResponse r;
  auto* set = r.add_sets();
  set->set_device(device);
  set->set_source("hw_counters");
  auto* c = set->add_counters();
  c->set_name("retransmits");
  c->set_source_name("packet_seq_err");
  c->set_value(retransmits);
  return r;
}

// The engine with its fakes: a local port on mlx5_0 port 1.
struct Rig {
  FakeEndpointBehaviour behaviour;
  FakeEndpointFactoryForTest factory{&behaviour};
  FakePeerClientForTest peers;
  CounterTree counters;
  LocalPort local;
  std::optional<absl::Status> local_error;
  InitiatorOptions options;
  bool no_factory = false;

  Rig() {
    local.device = "mlx5_0";
    local.port = 1;
    local.netdev = "eth0";
    local.numa_node = 1;
    options.name = "node1";
    options.sysfs_root = counters.root();
  }

  Initiator Make() {
    return Initiator(options, no_factory ? nullptr : &factory, &peers,
                     [this]() -> absl::StatusOr<LocalPort> {
                       if (local_error.has_value()) return *local_error;
                       return local;
                     });
  }
  InitiatorRun Run(const ProbeParams& params, const std::atomic<bool>* cancel = nullptr) {
    return Make().Run(params, cancel);
  }
};

ProbeParams Latency(uint32_t iterations = 100) {
  ProbeParams p;
  p.peer = "node2";
  p.address = kPeerAddress;
  p.kind = roced::v1::PROBE_KIND_LATENCY;
  p.size = 2;
  p.iterations = iterations;
  return p;
}

ProbeParams Bandwidth() {
  ProbeParams p;
  p.peer = "node2";
  p.address = kPeerAddress;
  p.kind = roced::v1::PROBE_KIND_BANDWIDTH;
  p.size = 65536;
  p.duration = absl::Seconds(2);
  p.qps = 2;
  p.outstanding = 128;
  return p;
}

absl::Duration Elapsed(const roced::v1::ProbeResult& r) {
  return absl::Seconds(r.elapsed().seconds()) + absl::Nanoseconds(r.elapsed().nanos());
}

TEST(Initiator, LatencyRunAsksThePeerConnectsRunsAndClosesBothEnds) {
  Rig rig;
  rig.peers.counters = {PeerCounters("mlx5_1", 5), PeerCounters("mlx5_1", 9)};
  rig.behaviour.on_run = [&] { rig.counters.Set("hw_counters", "np_cnp_sent", 14); };
  int live_at_close = -1;
  rig.peers.on_close = [&] { live_at_close = rig.behaviour.live.load(); };
  ProbeParams params = Latency();
  params.traffic_class = 106;
  params.busy_poll = true;
  const absl::Time t0 = absl::Now();
  InitiatorRun run = rig.Run(params);
  const roced::v1::ProbeResult& r = run.result;

  ASSERT_TRUE(r.success()) << r.failure_reason() << ": " << r.failure_detail();
  EXPECT_FALSE(r.id().empty());
  EXPECT_EQ(r.peer(), "node2");
  EXPECT_EQ(r.kind(), roced::v1::PROBE_KIND_LATENCY);
  EXPECT_EQ(r.device(), "mlx5_0");
  EXPECT_EQ(r.size(), 2u);
  EXPECT_EQ(r.iterations(), 100u);
  EXPECT_TRUE(r.busy_poll());
  EXPECT_EQ(r.latency().samples(), 100u);
  EXPECT_DOUBLE_EQ(r.latency().min_us(), 5);
  EXPECT_DOUBLE_EQ(r.latency().max_us(), 50);
  EXPECT_DOUBLE_EQ(r.latency().p50_us(), 30);
  EXPECT_EQ(run.rtt_ns.size(), 100u);  // for the caller's histogram
  EXPECT_GE(r.started_at().seconds(), absl::ToUnixSeconds(t0));

  // The local endpoint: one QP on the resolved port, one write in flight.
  {
    std::lock_guard<std::mutex> lock(rig.behaviour.mu);
    EXPECT_EQ(rig.behaviour.last_spec.device, "mlx5_0");
    EXPECT_EQ(rig.behaviour.last_spec.port, 1u);
    EXPECT_EQ(rig.behaviour.last_spec.netdev, "eth0");
    EXPECT_EQ(rig.behaviour.last_spec.numa_node, 1);
    EXPECT_EQ(rig.behaviour.last_spec.qps, 1u);
    EXPECT_EQ(rig.behaviour.last_spec.outstanding, 1u);
    EXPECT_TRUE(rig.behaviour.last_spec.busy_poll);
    EXPECT_EQ(rig.behaviour.last_latency.iterations, 100u);
    EXPECT_EQ(rig.behaviour.last_latency.round_trip_timeout, rig.options.round_trip_timeout);
    // Connected to the peer's queue pair with the requested class.
    ASSERT_EQ(rig.behaviour.last_remote.size(), 1u);
    EXPECT_EQ(rig.behaviour.last_remote[0].qpn(), 200u);
    EXPECT_EQ(rig.behaviour.last_traffic_class, 106u);
  }
  // What the peer was asked for.
  std::lock_guard<std::mutex> lock(rig.peers.mu);
  ASSERT_EQ(rig.peers.opens.size(), 1u);
  EXPECT_EQ(rig.peers.open_addresses[0], kPeerAddress);
  const roced::v1::OpenEndpointRequest& open = rig.peers.opens[0];
  EXPECT_EQ(open.initiator(), "node1");
  EXPECT_EQ(open.kind(), roced::v1::PROBE_KIND_LATENCY);
  ASSERT_EQ(open.initiator_qps_size(), 1);
  EXPECT_EQ(open.initiator_qps(0).qpn(), 100u);
  EXPECT_EQ(open.size(), 2u);
  EXPECT_EQ(open.traffic_class(), 106u);
  EXPECT_TRUE(open.busy_poll());
  EXPECT_EQ(open.lease_seconds(), 150u);  // the latency run bound (120 s) + 30 s
  EXPECT_LE(rig.peers.open_deadlines[0], absl::Now() + rig.options.open_timeout);
  EXPECT_GT(rig.peers.open_deadlines[0], t0 + rig.options.open_timeout - absl::Seconds(1));
  // Counter deltas of both ends: the local one through sysfs, the peer's
  // through its GetCounters of the device it named.
  ASSERT_EQ(r.local_counter_deltas_size(), 1);
  EXPECT_EQ(r.local_counter_deltas(0).name(), "np_cnp_sent");
  EXPECT_EQ(r.local_counter_deltas(0).delta(), 4u);
  ASSERT_EQ(rig.peers.counter_requests.size(), 2u);
  EXPECT_EQ(rig.peers.counter_requests[0].device(), "mlx5_1");
  ASSERT_EQ(r.peer_counter_deltas_size(), 1);
  EXPECT_EQ(r.peer_counter_deltas(0).name(), "packet_seq_err");
  EXPECT_EQ(r.peer_counter_deltas(0).delta(), 4u);
  EXPECT_EQ(r.peer_counters_error(), "");
  // The peer's endpoint closed by its id while the local one still
  // existed; then the local one released.
  ASSERT_EQ(rig.peers.closes.size(), 1u);
  EXPECT_EQ(rig.peers.closes[0].endpoint_id(), "peer-endpoint-1");
  EXPECT_EQ(live_at_close, 1);
  EXPECT_EQ(rig.behaviour.live.load(), 0);
}

TEST(Initiator, BandwidthRunSpreadsTheWritesOverItsQueuePairs) {
  Rig rig;
  InitiatorRun run = rig.Run(Bandwidth());
  const roced::v1::ProbeResult& r = run.result;
  ASSERT_TRUE(r.success()) << r.failure_reason() << ": " << r.failure_detail();
  EXPECT_EQ(r.kind(), roced::v1::PROBE_KIND_BANDWIDTH);
  EXPECT_EQ(r.size(), 65536u);
  EXPECT_EQ(r.iterations(), 0u);  // timed
  EXPECT_DOUBLE_EQ(r.bandwidth().gbps(), 10);
  EXPECT_NEAR(r.bandwidth().msg_rate_mpps(), 0.019073, 1e-9);
  EXPECT_FALSE(r.has_latency());
  EXPECT_THAT(run.rtt_ns, IsEmpty());
  {
    std::lock_guard<std::mutex> lock(rig.behaviour.mu);
    EXPECT_EQ(rig.behaviour.last_spec.qps, 2u);
    EXPECT_EQ(rig.behaviour.last_spec.outstanding, 64u);  // 128 over 2 QPs
    EXPECT_EQ(rig.behaviour.last_remote.size(), 2u);
    EXPECT_EQ(rig.behaviour.last_bandwidth.duration, absl::Seconds(2));
    EXPECT_EQ(rig.behaviour.last_bandwidth.outstanding, 128u);
    EXPECT_EQ(rig.behaviour.last_bandwidth.messages, 0u);
    EXPECT_EQ(rig.behaviour.last_bandwidth.completion_timeout, rig.options.completion_timeout);
    EXPECT_EQ(rig.behaviour.last_traffic_class, 0u);  // nothing configured
  }
  std::lock_guard<std::mutex> lock(rig.peers.mu);
  ASSERT_EQ(rig.peers.opens.size(), 1u);
  EXPECT_EQ(rig.peers.opens[0].initiator_qps_size(), 2);
  EXPECT_EQ(rig.peers.opens[0].lease_seconds(), 41u);  // 3 x 2 s + 5 s drain + 30 s
  EXPECT_EQ(rig.peers.closes.size(), 1u);
}

TEST(Initiator, CountedBandwidthRunReportsItsMessageCount) {
  Rig rig;
  ProbeParams params = Bandwidth();
  params.messages = 500;
  params.duration = absl::Seconds(30);
  InitiatorRun run = rig.Run(params);
  ASSERT_TRUE(run.result.success()) << run.result.failure_detail();
  EXPECT_EQ(run.result.iterations(), 500u);
  std::lock_guard<std::mutex> lock(rig.behaviour.mu);
  EXPECT_EQ(rig.behaviour.last_messages, 500u);
}

TEST(Initiator, TrafficClassIsTheParamsElseThePortsDefaultTos) {
  Rig rig;
  rig.local.default_tos = 106;
  rig.local.has_default_tos = true;
  ASSERT_TRUE(rig.Run(Latency(1)).result.success());
  {
    std::lock_guard<std::mutex> lock(rig.behaviour.mu);
    EXPECT_EQ(rig.behaviour.last_traffic_class, 106u);
  }
  ProbeParams params = Latency(1);
  params.traffic_class = 0;  // explicit wins over the port's
  ASSERT_TRUE(rig.Run(params).result.success());
  std::lock_guard<std::mutex> lock(rig.behaviour.mu);
  EXPECT_EQ(rig.behaviour.last_traffic_class, 0u);
}

TEST(Initiator, PeerUnavailableIsAResultAndReleasesTheLocalEndpoint) {
  Rig rig;
  rig.peers.open_error = absl::UnavailableError("failed to connect to all addresses");
  InitiatorRun run = rig.Run(Latency());
  const roced::v1::ProbeResult& r = run.result;
  EXPECT_FALSE(r.success());
  EXPECT_EQ(r.failure_reason(), "peer_unavailable");
  EXPECT_EQ(r.failure_detail(),
            absl::StrCat("OpenEndpoint at ", kPeerAddress, ": failed to connect to all addresses"));
  EXPECT_EQ(r.device(), "mlx5_0");
  EXPECT_EQ(r.timeouts(), 0u);
  EXPECT_EQ(r.wc_errors(), 0u);
  EXPECT_TRUE(r.has_elapsed());
  EXPECT_EQ(rig.behaviour.live.load(), 0);
  EXPECT_EQ(rig.behaviour.running.load(), 0);
  std::lock_guard<std::mutex> lock(rig.peers.mu);
  EXPECT_THAT(rig.peers.closes, IsEmpty());  // nothing to close
  EXPECT_THAT(rig.peers.counter_requests, IsEmpty());
}

TEST(Initiator, EachRefusalOfOpenEndpointHasItsReason) {
  const std::vector<std::pair<absl::StatusCode, std::string>> cases = {
      {absl::StatusCode::kUnavailable, "peer_unavailable"},
      {absl::StatusCode::kDeadlineExceeded, "peer_unavailable"},
      {absl::StatusCode::kResourceExhausted, "peer_busy"},
      {absl::StatusCode::kFailedPrecondition, "peer_device_unavailable"},
      {absl::StatusCode::kUnimplemented, "peer_unsupported"},
      {absl::StatusCode::kInvalidArgument, "peer_error"},
      {absl::StatusCode::kInternal, "peer_error"},
      {absl::StatusCode::kPermissionDenied, "peer_error"},
  };
  for (const auto& [code, reason] : cases) {
    Rig rig;
    rig.peers.open_error = absl::Status(code, "refused");
    const roced::v1::ProbeResult r = rig.Run(Latency()).result;
    EXPECT_FALSE(r.success()) << reason;
    EXPECT_EQ(r.failure_reason(), reason) << absl::StatusCodeToString(code);
    EXPECT_EQ(r.failure_detail(), absl::StrCat("OpenEndpoint at ", kPeerAddress, ": refused"));
    EXPECT_EQ(rig.behaviour.live.load(), 0);
    std::lock_guard<std::mutex> lock(rig.peers.mu);
    EXPECT_THAT(rig.peers.closes, IsEmpty());
  }
}

TEST(Initiator, ConnectTimeoutIsCountedAsATimeoutAndThePeerIsClosed) {
  Rig rig;
  rig.behaviour.run_error = ProbeError(absl::StatusCode::kDeadlineExceeded, kReasonConnectTimeout,
                                       "no send completion within 2s (iteration 1 of 100)");
  const roced::v1::ProbeResult r = rig.Run(Latency()).result;
  EXPECT_FALSE(r.success());
  EXPECT_EQ(r.failure_reason(), "connect_timeout");
  EXPECT_THAT(r.failure_detail(), HasSubstr("iteration 1 of 100"));
  EXPECT_EQ(r.timeouts(), 1u);
  EXPECT_EQ(r.wc_errors(), 0u);
  EXPECT_FALSE(r.has_latency());
  std::lock_guard<std::mutex> lock(rig.peers.mu);
  EXPECT_EQ(rig.peers.closes.size(), 1u);
}

TEST(Initiator, RunTimeoutIsCountedAsATimeout) {
  Rig rig;
  rig.behaviour.run_error =
      ProbeError(absl::StatusCode::kDeadlineExceeded, kReasonTimeout, "no completion");
  const roced::v1::ProbeResult r = rig.Run(Bandwidth()).result;
  EXPECT_EQ(r.failure_reason(), "timeout");
  EXPECT_EQ(r.timeouts(), 1u);
  EXPECT_FALSE(r.has_bandwidth());
}

TEST(Initiator, WorkCompletionErrorIsTheReasonAndThePeerIsStillClosed) {
  Rig rig;
  rig.behaviour.run_error = ProbeError(
      absl::StatusCode::kAborted, WcErrorReason(IBV_WC_RETRY_EXC_ERR), "work completion error on QP 17");
  InitiatorRun run = rig.Run(Latency());
  const roced::v1::ProbeResult& r = run.result;
  EXPECT_FALSE(r.success());
  EXPECT_EQ(r.failure_reason(), "wc_error:transport retry counter exceeded");
  EXPECT_EQ(r.failure_detail(), "work completion error on QP 17");
  EXPECT_EQ(r.wc_errors(), 1u);
  EXPECT_EQ(r.timeouts(), 0u);
  EXPECT_THAT(run.rtt_ns, IsEmpty());
  EXPECT_EQ(rig.behaviour.live.load(), 0);
  std::lock_guard<std::mutex> lock(rig.peers.mu);
  ASSERT_EQ(rig.peers.closes.size(), 1u);
  EXPECT_EQ(rig.peers.closes[0].endpoint_id(), "peer-endpoint-1");
}

TEST(Initiator, ACloseThatFailsLeavesTheResultAlone) {
  Rig rig;
  rig.peers.close_error = absl::UnavailableError("connection reset");
  const absl::Time t0 = absl::Now();
  const roced::v1::ProbeResult r = rig.Run(Latency()).result;
  EXPECT_TRUE(r.success()) << r.failure_detail();
  EXPECT_EQ(rig.behaviour.live.load(), 0);
  std::lock_guard<std::mutex> lock(rig.peers.mu);
  ASSERT_EQ(rig.peers.closes.size(), 1u);  // tried once; the lease does the rest
  EXPECT_LE(rig.peers.close_deadlines[0], absl::Now() + rig.options.close_timeout);
  EXPECT_GT(rig.peers.close_deadlines[0], t0 + rig.options.close_timeout - absl::Seconds(1));
}

// The elapsed time is the probe's: a slow close comes after it.
TEST(Initiator, ElapsedEndsBeforeThePeerIsClosed) {
  Rig rig;
  rig.peers.on_close = [] { absl::SleepFor(absl::Milliseconds(600)); };  // why: the slow close under test
  const roced::v1::ProbeResult r = rig.Run(Latency(1)).result;
  ASSERT_TRUE(r.success());
  EXPECT_LT(Elapsed(r), absl::Milliseconds(500));
}

TEST(Initiator, CancellingARunningProbeEndsItWithCancelled) {
  Rig rig;
  rig.behaviour.block = true;
  std::atomic<bool> cancel{false};
  Initiator initiator = rig.Make();
  auto run = std::async(std::launch::async, [&] { return initiator.Run(Latency(), &cancel); });
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (rig.behaviour.running.load() == 0 && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(5));  // poll: the loop's condition
  }
  ASSERT_EQ(rig.behaviour.running.load(), 1);
  cancel.store(true);
  ASSERT_EQ(run.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  const roced::v1::ProbeResult r = run.get().result;
  EXPECT_FALSE(r.success());
  EXPECT_EQ(r.failure_reason(), "cancelled");
  EXPECT_EQ(rig.behaviour.live.load(), 0);
  std::lock_guard<std::mutex> lock(rig.peers.mu);
  EXPECT_EQ(rig.peers.closes.size(), 1u);
}

TEST(Initiator, WithoutAnEndpointFactoryProbesFailWithDeviceUnavailable) {
  Rig rig;
  rig.no_factory = true;
  const roced::v1::ProbeResult r = rig.Run(Latency()).result;
  EXPECT_FALSE(r.success());
  EXPECT_EQ(r.failure_reason(), "device_unavailable");
  EXPECT_EQ(r.failure_detail(), "probes need libibverbs on the live /sys");
  EXPECT_EQ(r.device(), "");
  std::lock_guard<std::mutex> lock(rig.peers.mu);
  EXPECT_THAT(rig.peers.opens, IsEmpty());
}

TEST(Initiator, NoLocalPortOrNoEndpointFailsBeforeThePeerIsAsked) {
  Rig rig;
  rig.local_error = ProbeError(absl::StatusCode::kFailedPrecondition, kReasonDeviceUnavailable,
                               "no active RoCE port with an IPv4 RoCE v2 GID");
  roced::v1::ProbeResult r = rig.Run(Latency()).result;
  EXPECT_EQ(r.failure_reason(), "device_unavailable");
  EXPECT_EQ(r.failure_detail(), "no active RoCE port with an IPv4 RoCE v2 GID");
  EXPECT_EQ(rig.behaviour.created.load(), 0);

  rig.local_error.reset();
  rig.behaviour.create_error =
      ProbeError(absl::StatusCode::kFailedPrecondition, kReasonNoGid, "no IPv4 RoCE v2 GID on eth0");
  r = rig.Run(Latency()).result;
  EXPECT_EQ(r.failure_reason(), "no_gid");
  EXPECT_EQ(r.device(), "mlx5_0");
  std::lock_guard<std::mutex> lock(rig.peers.mu);
  EXPECT_THAT(rig.peers.opens, IsEmpty());
}

TEST(Initiator, ALocalConnectFailureStillClosesThePeersEndpoint) {
  Rig rig;
  rig.behaviour.connect_error =
      ProbeError(absl::StatusCode::kInternal, kReasonLocalError, "ibv_modify_qp to RTR: EINVAL");
  const roced::v1::ProbeResult r = rig.Run(Latency()).result;
  EXPECT_EQ(r.failure_reason(), "local_error");
  EXPECT_EQ(rig.behaviour.running.load(), 0);
  EXPECT_EQ(rig.behaviour.live.load(), 0);
  std::lock_guard<std::mutex> lock(rig.peers.mu);
  EXPECT_EQ(rig.peers.closes.size(), 1u);
  EXPECT_THAT(rig.peers.counter_requests, IsEmpty());
}

TEST(Initiator, PeerCountersThatCannotBeReadAreReportedNotFailed) {
  {
    Rig rig;  // GetCounters refused before the run
    rig.peers.counters = {absl::UnavailableError("connection reset")};
    const roced::v1::ProbeResult r = rig.Run(Latency()).result;
    EXPECT_TRUE(r.success());
    EXPECT_EQ(r.peer_counters_error(), "before the run: GetCounters: connection reset");
    EXPECT_EQ(r.peer_counter_deltas_size(), 0);
  }
  {
    Rig rig;  // answered before, not after
    rig.peers.counters = {PeerCounters("mlx5_1", 1)};
    const roced::v1::ProbeResult r = rig.Run(Latency()).result;
    EXPECT_TRUE(r.success());
    EXPECT_EQ(r.peer_counters_error(), "after the run: GetCounters: no answer configured");
  }
  {
    Rig rig;  // the peer has no counters for its device
    rig.peers.counters = {PeerCounters("mlx5_9", 1)};
    const roced::v1::ProbeResult r = rig.Run(Latency()).result;
    EXPECT_EQ(r.peer_counters_error(), "before the run: GetCounters: no RDMA counters for mlx5_1");
  }
  {
    Rig rig;  // the peer named no device: not asked at all
    rig.peers.open_response.clear_device();
    const roced::v1::ProbeResult r = rig.Run(Latency()).result;
    EXPECT_EQ(r.peer_counters_error(), "before the run: the peer named no RDMA device");
    std::lock_guard<std::mutex> lock(rig.peers.mu);
    EXPECT_THAT(rig.peers.counter_requests, IsEmpty());
  }
}

TEST(Initiator, ProbesRunFromManyThreadsAtOnce) {
  Rig rig;
  Initiator initiator = rig.Make();
  std::vector<std::future<bool>> runs;
  for (int i = 0; i < 8; ++i) {
    runs.push_back(std::async(std::launch::async,
                              [&] { return initiator.Run(Latency(10), nullptr).result.success(); }));
  }
  for (auto& f : runs) EXPECT_TRUE(f.get());
  EXPECT_EQ(rig.behaviour.live.load(), 0);
  std::lock_guard<std::mutex> lock(rig.peers.mu);
  EXPECT_EQ(rig.peers.closes.size(), 8u);
}

TEST(Initiator, ThePeersDataIpComesFromItsGidAndReachesTheSummary) {
  Rig rig;
  roced::v1::QpEndpoint* qp = rig.peers.open_response.add_responder_qps();
  qp->set_qpn(200);
  qp->set_gid(std::string("\0\0\0\0\0\0\0\0\0\0\xff\xff\x0a\x00\x00\x0c", 16));  // ::ffff:10.0.0.12
  qp->set_rkey(43);
  qp->set_length(2);
  const roced::v1::ProbeResult r = rig.Run(Latency()).result;
  ASSERT_TRUE(r.success()) << r.failure_reason() << ": " << r.failure_detail();
  EXPECT_EQ(r.peer_data_ip(), "10.0.0.12");
  EXPECT_EQ(SummaryOf(r).peer_data_ip(), "10.0.0.12");

  Rig refused;  // no answer from the peer: no address known
  refused.peers.open_error = absl::UnavailableError("failed to connect to all addresses");
  EXPECT_EQ(refused.Run(Latency()).result.peer_data_ip(), "");
}

}  // namespace
}  // namespace roced::probe

// The agent's probe wiring over real gRPC servers on loopback (agents on
// the fixture sysfs tree), with a fake endpoint factory in place of
// libibverbs: peer set-up and tear-down across two agents, failure reasons
// on a real network, limits, responder leases, history, metrics and the
// schedule. The engine's own logic is tested without gRPC in
// probe_initiator_test and probe_responder_test; the verbs engine runs in
// the lab (tests/lab/tests/probe_*.sh).
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <mutex>
#include <functional>
#include <future>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "agent/core/agent.h"
#include "agent/runtimes/probe_runtime.h"
#include "agent/serve/server.h"
#include "fixture_daemon.h"
#include "fake_probe_for_test.h"
#include "google/protobuf/util/json_util.h"
#include "probe/reason.h"
#include "prometheus/text_serializer.h"
#include "test_util.h"
#include "util/fs.h"
#include "roced/v1/agent.grpc.pb.h"
#include "roced/v1/peer.grpc.pb.h"

namespace roced::agent {
namespace {

using ::testing::HasSubstr;

using FakeBehaviour = probe::FakeEndpointBehaviour;
using FakeFactory = probe::FakeEndpointFactoryForTest;

// One agent with its gRPC server on loopback and a fake RDMA engine.
class Node {
 public:
  Node(const std::string& config, bool fake = true, bool schedule = false,
       ProbeRuntimeOptions extra = {}) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "roced-probe-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
    FILE* f = fopen((dir_ + "/roced.yaml").c_str(), "w");
    fputs(absl::StrCat("apiVersion: roced/v1\nkind: NodeConfig\nmode: observe\n", config).c_str(), f);
    fclose(f);
    DaemonOptions opts = FixtureDaemonOptions(dir_);
    opts.agent.reconcile = false;
    opts.server.grpc_listen = "127.0.0.1:0";
    opts.server.insecure = true;
    opts.probes = extra;
    if (fake) opts.probes.factory = &factory_;
    opts.probes.schedule = schedule;
    node_ = std::make_unique<Daemon>(std::move(opts));
    agent_ = node_->agent();
    server_ = node_->server();
    EXPECT_TRUE(node_->Start().ok());
  }
  ~Node() {
    node_->Stop(absl::Seconds(1));
    std::filesystem::remove_all(dir_);
  }

  std::string address() const { return absl::StrCat("127.0.0.1:", server_->grpc_port()); }
  std::unique_ptr<roced::v1::Agent::Stub> Stub() const {
    return roced::v1::Agent::NewStub(grpc::CreateChannel(address(), grpc::InsecureChannelCredentials()));
  }
  std::unique_ptr<roced::v1::ProbePeer::Stub> PeerStub() const {
    return roced::v1::ProbePeer::NewStub(
        grpc::CreateChannel(address(), grpc::InsecureChannelCredentials()));
  }
  grpc::Status RunProbe(const roced::v1::RunProbeRequest& req, roced::v1::ProbeResult* result,
                        int seconds = 20) const {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
    return Stub()->RunProbe(&ctx, req, result);
  }
  std::string Metrics() const {
    return prometheus::TextSerializer().Serialize(agent_->registry()->Collect());
  }

  FakeBehaviour behaviour;
  Agent* agent() { return agent_; }

 private:
  FakeFactory factory_{&behaviour};
  std::string dir_;
  std::unique_ptr<Daemon> node_;
  Agent* agent_ = nullptr;
  Server* server_ = nullptr;
};

std::string PeersConfig(const std::string& name, const std::string& address,
                        const std::string& extra = "") {
  return absl::StrCat("probes:\n  peers:\n    - name: ", name, "\n      address: \"", address,
                      "\"\n", extra);
}

roced::v1::RunProbeRequest Request(const std::string& peer,
                                   roced::v1::ProbeKind kind = roced::v1::PROBE_KIND_LATENCY) {
  roced::v1::RunProbeRequest r;
  r.set_peer(peer);
  r.set_kind(kind);
  return r;
}

// A loopback port nothing listens on.
int ClosedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

absl::Duration Elapsed(const roced::v1::ProbeResult& r) {
  return absl::Seconds(r.elapsed().seconds()) + absl::Nanoseconds(r.elapsed().nanos());
}

bool WaitFor(const std::function<bool()>& cond, absl::Duration timeout = absl::Seconds(10)) {
  const absl::Time end = absl::Now() + timeout;
  while (absl::Now() < end) {
    if (cond()) return true;
    absl::SleepFor(absl::Milliseconds(10));  // poll: `cond`
  }
  return cond();
}

TEST(ProbeRuntime, LatencyProbeToAConfiguredPeerReportsStatsAndReleasesBothEndpoints) {
  Node responder("");
  Node initiator(PeersConfig("node2", responder.address(), "  traffic_class: 106\n"));
  roced::v1::RunProbeRequest req = Request("node2");
  req.set_iterations(100);
  roced::v1::ProbeResult r;
  ASSERT_TRUE(initiator.RunProbe(req, &r).ok());
  EXPECT_TRUE(r.success()) << r.failure_reason() << ": " << r.failure_detail();
  EXPECT_EQ(r.peer(), "node2");
  EXPECT_EQ(r.device(), "mlx5_0");  // the fixture's first active RoCE v2 port
  EXPECT_EQ(r.iterations(), 100u);
  EXPECT_EQ(r.size(), 2u);  // the latency default
  EXPECT_EQ(r.latency().samples(), 100u);
  EXPECT_DOUBLE_EQ(r.latency().min_us(), 5);
  EXPECT_DOUBLE_EQ(r.latency().max_us(), 50);
  EXPECT_DOUBLE_EQ(r.latency().p50_us(), 30);
  EXPECT_FALSE(r.id().empty());
  // Both sides connected to each other's queue pairs with the configured
  // traffic class, then released everything.
  {
    std::lock_guard<std::mutex> lock(initiator.behaviour.mu);
    ASSERT_EQ(initiator.behaviour.last_remote.size(), 1u);
    EXPECT_EQ(initiator.behaviour.last_traffic_class, 106u);
  }
  {
    std::lock_guard<std::mutex> lock(responder.behaviour.mu);
    EXPECT_EQ(responder.behaviour.last_traffic_class, 106u);
  }
  EXPECT_EQ(initiator.behaviour.live.load(), 0);
  EXPECT_TRUE(WaitFor([&] { return responder.behaviour.live.load() == 0; }));
  EXPECT_EQ(responder.behaviour.created.load(), 1);
  EXPECT_EQ(responder.behaviour.serving.load(), 0);
  const std::string metrics = initiator.Metrics();
  EXPECT_THAT(metrics,
              HasSubstr("roced_probe_latency_seconds_count{device=\"mlx5_0\",peer=\"node2\"} 100"));
  EXPECT_THAT(metrics,
              HasSubstr("roced_probe_last_success_timestamp_seconds{kind=\"latency\",peer=\"node2\"}"));
}

TEST(ProbeRuntime, BandwidthProbeReportsGbpsAndTheBandwidthGauge) {
  Node responder("");
  Node initiator("");
  roced::v1::ProbeResult r;
  roced::v1::RunProbeRequest req = Request(responder.address(), roced::v1::PROBE_KIND_BANDWIDTH);
  req.set_qps(2);
  ASSERT_TRUE(initiator.RunProbe(req, &r).ok());
  ASSERT_TRUE(r.success()) << r.failure_reason() << ": " << r.failure_detail();
  EXPECT_EQ(r.peer(), responder.address());  // host:port given directly
  EXPECT_EQ(r.size(), 65536u);
  EXPECT_DOUBLE_EQ(r.bandwidth().gbps(), 10);
  EXPECT_NEAR(r.bandwidth().msg_rate_mpps(), 0.019073, 1e-9);
  {
    std::lock_guard<std::mutex> lock(responder.behaviour.mu);
    EXPECT_EQ(responder.behaviour.last_remote.size(), 2u);  // one per QP
  }
  EXPECT_THAT(initiator.Metrics(),
              HasSubstr("roced_probe_bandwidth_bits_per_second{device=\"mlx5_0\",peer=\"adhoc\"} 10000000000"));
  // The result and the history keep the address; only the metric label is
  // shared by every address outside the config.
  EXPECT_EQ(r.peer(), responder.address());
}

// A result says where the peer's counter deltas went when the peer could
// not give them, instead of an empty list that looks like a quiet peer.
TEST(ProbeRuntime, PeerCountersThatCannotBeReadAreReportedInTheResult) {
  Node responder("");
  Node initiator("");
  roced::v1::ProbeResult ok;
  ASSERT_TRUE(initiator.RunProbe(Request(responder.address()), &ok).ok());
  ASSERT_TRUE(ok.success()) << ok.failure_detail();
  EXPECT_EQ(ok.peer_counters_error(), "");
  {
    std::lock_guard<std::mutex> lock(responder.behaviour.mu);
    responder.behaviour.device_override = "mlx5_gone";
  }
  roced::v1::ProbeResult r;
  ASSERT_TRUE(initiator.RunProbe(Request(responder.address()), &r).ok());
  EXPECT_TRUE(r.success()) << r.failure_detail();  // the probe itself ran
  EXPECT_EQ(r.peer_counter_deltas_size(), 0);
  EXPECT_THAT(r.peer_counters_error(), HasSubstr("before the run: "));
  EXPECT_THAT(r.peer_counters_error(), HasSubstr("mlx5_gone"));
}

// A counted bandwidth run (ib_write_bw -n) and busy polling reach both
// ends' endpoints, and the result says so.
TEST(ProbeRuntime, CountedBusyPolledBandwidthRunReachesBothEnds) {
  Node responder("");
  Node initiator("");
  roced::v1::RunProbeRequest req = Request(responder.address(), roced::v1::PROBE_KIND_BANDWIDTH);
  req.set_iterations(500);
  req.set_busy_poll(true);
  roced::v1::ProbeResult r;
  ASSERT_TRUE(initiator.RunProbe(req, &r).ok());
  ASSERT_TRUE(r.success()) << r.failure_detail();
  EXPECT_EQ(r.iterations(), 500u);
  EXPECT_TRUE(r.busy_poll());
  {
    std::lock_guard<std::mutex> lock(initiator.behaviour.mu);
    EXPECT_EQ(initiator.behaviour.last_messages, 500u);
    EXPECT_TRUE(initiator.behaviour.last_busy_poll);
  }
  {
    std::lock_guard<std::mutex> lock(responder.behaviour.mu);
    EXPECT_TRUE(responder.behaviour.last_busy_poll);
  }
  // Timed by default, and polite polling.
  roced::v1::ProbeResult timed;
  ASSERT_TRUE(initiator.RunProbe(Request(responder.address(), roced::v1::PROBE_KIND_BANDWIDTH),
                                 &timed).ok());
  EXPECT_FALSE(timed.busy_poll());
  std::lock_guard<std::mutex> lock(initiator.behaviour.mu);
  EXPECT_EQ(initiator.behaviour.last_messages, 0u);
  EXPECT_FALSE(initiator.behaviour.last_busy_poll);
}

TEST(ProbeRuntime, PeerAgentDownFailsWithPeerUnavailableWithinTheOpenTimeout) {
  ProbeRuntimeOptions opts;
  opts.open_timeout = absl::Seconds(2);
  Node initiator("", true, false, opts);
  const std::string dead = absl::StrCat("127.0.0.1:", ClosedPort());
  roced::v1::ProbeResult r;
  const absl::Time t0 = absl::Now();
  ASSERT_TRUE(initiator.RunProbe(Request(dead), &r).ok());
  EXPECT_LT(absl::Now() - t0, absl::Seconds(4));
  EXPECT_FALSE(r.success());
  EXPECT_EQ(r.failure_reason(), "peer_unavailable");
  EXPECT_THAT(r.failure_detail(), HasSubstr(dead));
  EXPECT_LT(Elapsed(r), absl::Seconds(3));
  EXPECT_EQ(initiator.behaviour.live.load(), 0);  // local endpoint released
  EXPECT_THAT(initiator.Metrics(),
              HasSubstr("roced_probe_failures_total{peer=\"adhoc\",reason=\"peer_unavailable\"} 1"));
}

TEST(ProbeRuntime, SilentPeerFailsWithPeerUnavailableWhenTheOpenTimeoutPasses) {
  // Accepts TCP connections (kernel backlog) but never speaks HTTP/2: a
  // hung agent or a black-holed path.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 16), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ProbeRuntimeOptions opts;
  opts.open_timeout = absl::Seconds(1);
  Node initiator("", true, false, opts);
  roced::v1::ProbeResult r;
  ASSERT_TRUE(initiator.RunProbe(Request(absl::StrCat("127.0.0.1:", ntohs(addr.sin_port))), &r).ok());
  close(fd);
  EXPECT_EQ(r.failure_reason(), "peer_unavailable");
  EXPECT_GE(Elapsed(r), absl::Milliseconds(900));
  EXPECT_LT(Elapsed(r), absl::Seconds(3));
}

TEST(ProbeRuntime, RunProbeBeyondMaxConcurrentIsResourceExhausted) {
  Node responder("");
  Node initiator(PeersConfig("node2", responder.address(), "  max_concurrent: 1\n"));
  initiator.behaviour.block = true;
  auto first = std::async(std::launch::async, [&] {
    roced::v1::ProbeResult r;
    grpc::Status s = initiator.RunProbe(Request("node2"), &r);
    return s.ok() && r.success();
  });
  ASSERT_TRUE(WaitFor([&] { return initiator.behaviour.running.load() == 1; }));
  roced::v1::ProbeResult r;
  grpc::Status s = initiator.RunProbe(Request("node2"), &r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("max_concurrent is 1"));
  initiator.behaviour.block = false;
  EXPECT_TRUE(first.get());
  // The slot is free again.
  EXPECT_TRUE(initiator.RunProbe(Request("node2"), &r).ok());
}

TEST(ProbeRuntime, UnknownPeerIsNotFoundAndBadParametersAreInvalid) {
  Node initiator(PeersConfig("node2", "127.0.0.1:1"));
  roced::v1::ProbeResult r;
  grpc::Status s = initiator.RunProbe(Request("node9"), &r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("node2"));  // lists the known peers
  EXPECT_EQ(initiator.RunProbe(Request(""), &r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  auto bw = Request("node2", roced::v1::PROBE_KIND_BANDWIDTH);
  bw.mutable_duration()->set_seconds(31);
  s = initiator.RunProbe(bw, &r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("duration"));
  auto big = Request("node2");
  big.set_size(0);
  EXPECT_EQ(initiator.RunProbe(big, &r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  auto tc = Request("node2");
  tc.set_traffic_class(256);
  EXPECT_EQ(initiator.RunProbe(tc, &r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // A counted bandwidth run: 1 to 1,000,000 messages.
  for (uint32_t n : {0u, 1000001u}) {
    auto counted = Request("node2", roced::v1::PROBE_KIND_BANDWIDTH);
    counted.set_iterations(n);
    s = initiator.RunProbe(counted, &r);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << n;
    EXPECT_THAT(s.error_message(), HasSubstr("iterations: " + std::to_string(n) +
                                             " is out of range; allowed 1-1000000"));
  }
  EXPECT_EQ(initiator.behaviour.created.load(), 0);
}

TEST(ProbeRuntime, WorkCompletionErrorIsTheFailureReasonAndIsCounted) {
  Node responder("");
  Node initiator(PeersConfig("node2", responder.address()));
  {
    std::lock_guard<std::mutex> lock(initiator.behaviour.mu);
    initiator.behaviour.run_error =
        probe::ProbeError(absl::StatusCode::kAborted, probe::WcErrorReason(IBV_WC_RETRY_EXC_ERR),
                          "work completion error on QP 17");
  }
  roced::v1::ProbeResult r;
  ASSERT_TRUE(initiator.RunProbe(Request("node2"), &r).ok());
  EXPECT_FALSE(r.success());
  EXPECT_EQ(r.failure_reason(), "wc_error:transport retry counter exceeded");
  EXPECT_EQ(r.wc_errors(), 1u);
  EXPECT_THAT(initiator.Metrics(),
              HasSubstr("roced_probe_failures_total{peer=\"node2\",reason=\"wc_error:transport "
                        "retry counter exceeded\"} 1"));
  // The peer's endpoint was closed even though the run failed.
  EXPECT_TRUE(WaitFor([&] { return responder.behaviour.live.load() == 0; }));
}

// The runtime's peer client seam: a fake peer agent in place of gRPC; what
// it answers reaches the result, the history and the metrics.
TEST(ProbeRuntime, APeerClientGivenInTheOptionsIsTheOneUsed) {
  probe::FakePeerClientForTest peer;
  peer.open_error = absl::ResourceExhaustedError("32 probe endpoints open; the limit is 32");
  ProbeRuntimeOptions opts;
  opts.peers = &peer;
  opts.name = "node1";
  Node initiator(PeersConfig("node2", "10.9.9.9:7471"), true, false, opts);
  roced::v1::ProbeResult r;
  ASSERT_TRUE(initiator.RunProbe(Request("node2"), &r).ok());
  EXPECT_EQ(r.failure_reason(), "peer_busy");
  EXPECT_EQ(r.failure_detail(),
            "OpenEndpoint at 10.9.9.9:7471: 32 probe endpoints open; the limit is 32");
  {
    std::lock_guard<std::mutex> lock(peer.mu);
    ASSERT_EQ(peer.opens.size(), 1u);
    EXPECT_EQ(peer.open_addresses[0], "10.9.9.9:7471");
    EXPECT_EQ(peer.opens[0].initiator(), "node1");
    peer.open_error = absl::OkStatus();
  }
  EXPECT_THAT(initiator.Metrics(),
              HasSubstr("roced_probe_failures_total{peer=\"node2\",reason=\"peer_busy\"} 1"));
  ASSERT_TRUE(initiator.RunProbe(Request("node2"), &r).ok());
  EXPECT_TRUE(r.success()) << r.failure_detail();
  EXPECT_EQ(r.peer_counters_error(), "before the run: GetCounters: no answer configured");
  EXPECT_EQ(initiator.behaviour.live.load(), 0);
  std::lock_guard<std::mutex> lock(peer.mu);
  ASSERT_EQ(peer.closes.size(), 1u);
  EXPECT_EQ(peer.closes[0].endpoint_id(), "peer-endpoint-1");
}

roced::v1::OpenEndpointRequest OpenRequest(uint32_t lease_seconds = 60) {
  roced::v1::OpenEndpointRequest req;
  req.set_initiator("test");
  req.set_kind(roced::v1::PROBE_KIND_LATENCY);
  req.set_size(2);
  req.set_lease_seconds(lease_seconds);
  auto* qp = req.add_initiator_qps();
  qp->set_qpn(9);
  qp->set_gid(std::string(16, '\x02'));
  qp->set_rkey(5);
  qp->set_length(2);
  return req;
}

grpc::Status Open(const Node& node, const roced::v1::OpenEndpointRequest& req,
                  roced::v1::OpenEndpointResponse* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  return node.PeerStub()->OpenEndpoint(&ctx, req, resp);
}

// The default limit, the one the README states: 32 at once, the 33rd
// refused. (All from this one caller here, so its share is raised to the
// whole; the next test holds the share.)
TEST(ProbeRuntime, ResponderServesManyInitiatorsAtOnceUpToItsLimit) {
  constexpr int kLimit = 32;
  ProbeRuntimeOptions opts;
  opts.max_responder_endpoints_per_caller = kLimit;
  Node responder("", true, false, opts);
  std::vector<std::future<std::string>> opens;
  for (int i = 0; i < kLimit; ++i) {
    opens.push_back(std::async(std::launch::async, [&] {
      roced::v1::OpenEndpointResponse resp;
      return Open(responder, OpenRequest(), &resp).ok() ? resp.endpoint_id() : std::string();
    }));
  }
  std::set<std::string> ids;
  for (auto& f : opens) ids.insert(f.get());
  EXPECT_EQ(ids.size(), static_cast<size_t>(kLimit));
  EXPECT_EQ(ids.count(""), 0u);
  EXPECT_TRUE(WaitFor([&] { return responder.behaviour.serving.load() == kLimit; }));
  roced::v1::OpenEndpointResponse resp;
  grpc::Status s = Open(responder, OpenRequest(), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  for (const auto& id : ids) {
    grpc::ClientContext ctx;
    roced::v1::CloseEndpointRequest req;
    req.set_endpoint_id(id);
    roced::v1::CloseEndpointResponse cr;
    EXPECT_TRUE(responder.PeerStub()->CloseEndpoint(&ctx, req, &cr).ok());
  }
  EXPECT_EQ(responder.behaviour.live.load(), 0);
  EXPECT_EQ(responder.behaviour.serving.load(), 0);
}

TEST(ProbeRuntime, OneCallerGetsAtMostItsShareOfTheResponder) {
  Node responder("");
  for (int i = 0; i < 8; ++i) {
    roced::v1::OpenEndpointResponse resp;
    ASSERT_TRUE(Open(responder, OpenRequest(), &resp).ok()) << i;
  }
  roced::v1::OpenEndpointResponse resp;
  grpc::Status s = Open(responder, OpenRequest(), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("; one caller may hold 8"));
}

TEST(ProbeRuntime, ResponderReleasesAnEndpointWhoseLeaseExpired) {
  Node responder("");
  roced::v1::OpenEndpointResponse resp;
  ASSERT_TRUE(Open(responder, OpenRequest(/*lease_seconds=*/1), &resp).ok());
  EXPECT_EQ(responder.behaviour.live.load(), 1);
  // The initiator vanished: nobody closes it.
  EXPECT_TRUE(WaitFor([&] { return responder.behaviour.live.load() == 0; }, absl::Seconds(5)));
  EXPECT_EQ(responder.behaviour.serving.load(), 0);
  grpc::ClientContext ctx;
  roced::v1::CloseEndpointRequest req;
  req.set_endpoint_id(resp.endpoint_id());
  roced::v1::CloseEndpointResponse cr;
  EXPECT_EQ(responder.PeerStub()->CloseEndpoint(&ctx, req, &cr).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST(ProbeRuntime, OpenEndpointRejectsMalformedInitiatorQueuePairs) {
  Node responder("");
  roced::v1::OpenEndpointResponse resp;
  auto req = OpenRequest();
  req.mutable_initiator_qps(0)->set_gid("short");
  EXPECT_EQ(Open(responder, req, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  req = OpenRequest();
  req.clear_initiator_qps();
  EXPECT_EQ(Open(responder, req, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  req = OpenRequest();
  req.set_kind(roced::v1::PROBE_KIND_UNSPECIFIED);
  EXPECT_EQ(Open(responder, req, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(responder.behaviour.created.load(), 0);
}

TEST(ProbeRuntime, HistoryIsListedNewestFirstAndSummarisedInGetState) {
  Node responder("");
  Node initiator(PeersConfig("node2", responder.address()));
  roced::v1::ProbeResult r;
  ASSERT_TRUE(initiator.RunProbe(Request("node2"), &r).ok());
  ASSERT_TRUE(initiator.RunProbe(Request("node2", roced::v1::PROBE_KIND_BANDWIDTH), &r).ok());
  const std::string last_id = r.id();
  grpc::ClientContext ctx;
  roced::v1::ListProbeResultsRequest list;
  list.set_peer("node2");
  roced::v1::ListProbeResultsResponse resp;
  ASSERT_TRUE(initiator.Stub()->ListProbeResults(&ctx, list, &resp).ok());
  ASSERT_EQ(resp.results_size(), 2);
  EXPECT_EQ(resp.results(0).id(), last_id);
  list.set_kind(roced::v1::PROBE_KIND_LATENCY);
  grpc::ClientContext ctx2;
  ASSERT_TRUE(initiator.Stub()->ListProbeResults(&ctx2, list, &resp).ok());
  ASSERT_EQ(resp.results_size(), 1);
  EXPECT_EQ(resp.results(0).kind(), roced::v1::PROBE_KIND_LATENCY);

  grpc::ClientContext ctx3;
  roced::v1::NodeState state;
  ASSERT_TRUE(initiator.Stub()->GetState(&ctx3, {}, &state).ok());
  ASSERT_EQ(state.probes_size(), 2);
  for (const auto& s : state.probes()) {
    EXPECT_EQ(s.peer(), "node2");
    EXPECT_TRUE(s.last_success());
    if (s.kind() == roced::v1::PROBE_KIND_LATENCY) {
      EXPECT_DOUBLE_EQ(s.p50_us(), 30);
    } else {
      EXPECT_DOUBLE_EQ(s.gbps(), 10);
    }
  }
}

TEST(ProbeRuntime, ScheduledProbesRunOnTheirInterval) {
  Node responder("");
  Node initiator(PeersConfig("node2", responder.address(),
                             "  latency: {interval: 1s, iterations: 10}\n"),
                 true, /*schedule=*/true);
  // The bandwidth pair (default every 5 minutes) is first due at a random
  // point of its first interval, so it can come up in these seconds too:
  // only latency results are counted and checked.
  roced::v1::ListProbeResultsRequest latency_only;
  latency_only.set_kind(roced::v1::PROBE_KIND_LATENCY);
  auto count = [&] {
    grpc::ClientContext c;
    roced::v1::ListProbeResultsResponse resp;
    initiator.Stub()->ListProbeResults(&c, latency_only, &resp);
    return resp.results_size();
  };
  // First run within the first (jittered) interval, then about once a
  // second.
  EXPECT_TRUE(WaitFor([&] { return count() >= 3; }, absl::Seconds(8)));
  roced::v1::ListProbeResultsResponse resp;
  grpc::ClientContext c;
  initiator.Stub()->ListProbeResults(&c, latency_only, &resp);
  ASSERT_GE(resp.results_size(), 3);
  for (const auto& r : resp.results()) {
    EXPECT_EQ(r.kind(), roced::v1::PROBE_KIND_LATENCY);
    EXPECT_EQ(r.iterations(), 10u);
    EXPECT_TRUE(r.success()) << r.failure_reason();
  }
}

TEST(ProbeRuntime, WithoutRdmaProbesFailWithDeviceUnavailable) {
  // The real runtime on a fixture tree: no libibverbs there.
  Node responder("", /*fake=*/false);
  Node initiator(PeersConfig("node2", responder.address()), /*fake=*/false);
  roced::v1::ProbeResult r;
  ASSERT_TRUE(initiator.RunProbe(Request("node2"), &r).ok());
  EXPECT_FALSE(r.success());
  EXPECT_EQ(r.failure_reason(), "device_unavailable");
  roced::v1::OpenEndpointResponse resp;
  EXPECT_EQ(Open(responder, OpenRequest(), &resp).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
}

TEST(ProbeRuntime, StoppingTheAgentCancelsARunningProbe) {
  Node responder("");
  auto initiator = std::make_unique<Node>(PeersConfig("node2", responder.address()));
  initiator->behaviour.block = true;
  // The caller's thread touches only its own stub: the Node is destroyed
  // by another thread while the call is in flight.
  std::shared_ptr<roced::v1::Agent::Stub> stub = initiator->Stub();
  auto run = std::async(std::launch::async, [stub] {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    roced::v1::ProbeResult r;
    grpc::Status s = stub->RunProbe(&ctx, Request("node2"), &r);
    return std::make_pair(s.error_code(), r.failure_reason());
  });
  ASSERT_TRUE(WaitFor([&] { return initiator->behaviour.running.load() == 1; }));
  const absl::Time t0 = absl::Now();
  auto [code, reason] = [&] {
    std::thread stopper([&] { initiator.reset(); });
    auto out = run.get();
    stopper.join();
    return out;
  }();
  EXPECT_LT(absl::Now() - t0, absl::Seconds(5));
  // Either the result arrived (cancelled) or the server went away first.
  if (code == grpc::StatusCode::OK) {
    EXPECT_EQ(reason, "cancelled");
  }
}

// The baselines a configured peer's probes make are in the state directory
// when the agent stops, under the local device's driver and firmware, and
// the next agent on that directory continues them.
TEST(ProbeRuntime, ProbeBaselinesSurviveARestartInTheStateDirectory) {
  Node responder("");
  const std::string dir = roced::test_util::MakeTempDir("roced-baselines");
  ProbeRuntimeOptions opts;
  opts.baseline_path = dir + "/probe-baselines.json";
  auto one_probe = [&] {
    Node initiator(PeersConfig("node2", responder.address()), true, false, opts);
    roced::v1::ProbeResult r;
    ASSERT_TRUE(initiator.RunProbe(Request("node2"), &r).ok());
    ASSERT_TRUE(r.success()) << r.failure_reason();
  };
  one_probe();
  roced::v1::ProbeBaselines saved;
  auto load = [&] {
    absl::StatusOr<std::string> text = util::ReadFile(opts.baseline_path);
    ASSERT_TRUE(text.ok()) << text.status();
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(*text, &saved).ok()) << *text;
  };
  load();
  ASSERT_EQ(saved.baselines_size(), 1);
  EXPECT_EQ(saved.baselines(0).peer(), "node2");
  EXPECT_EQ(saved.baselines(0).device(), "mlx5_0");
  EXPECT_EQ(saved.baselines(0).current().driver(), "mlx5_core");
  EXPECT_EQ(saved.baselines(0).current().fw_version(), "22.36.1010");
  EXPECT_EQ(saved.baselines(0).current().p50_us_size(), 1);
  one_probe();  // a restarted agent
  load();
  ASSERT_EQ(saved.baselines_size(), 1);
  EXPECT_EQ(saved.baselines(0).current().p50_us_size(), 2);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace roced::agent

// The agent's counters wiring: GetCounters over real gRPC on a copy of the
// fixture tree (values, rates, filters), the counter families on the real
// /metrics endpoint, and a PFC storm seen by the watchdog through a
// stand-in netdev statistics reader, published on WatchState and exported.
#include "agent/runtimes/counters_runtime.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "agent/core/agent.h"
#include "agent/core/backends.h"
#include "agent/serve/server.h"
#include "roced/v1/agent.grpc.pb.h"
#include "util/clock.h"

#include "test_util.h"

namespace roced::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// An agent on a private copy of the fixture tree, so tests can change
// counter values under it.
class AgentOnFixtureCopy {
 public:
  explicit AgentOnFixtureCopy(const std::string& config)
      : dir_(roced::test_util::MakeTempDir("roced-crt")), backends_(Paths(dir_), /*use_verbs=*/false) {
    fs::copy(std::string(ROCED_FIXTURES) + "/sysfs", dir_ + "/sysfs",
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    std::ofstream(dir_ + "/roced.yaml") << config;
    AgentOptions opts;
    opts.paths.sysfs = dir_ + "/sysfs";
    opts.config_path = dir_ + "/roced.yaml";
    opts.state_dir = dir_;
    opts.use_netlink = false;
    opts.backends = backends_.agent();
    agent_ = std::make_unique<Agent>(opts);
    EXPECT_TRUE(agent_->LoadConfig().ok());
    agent_->Start();
  }
  ~AgentOnFixtureCopy() {
    agent_->Stop();
    agent_.reset();  // before the directory goes: it may still write its state there
    fs::remove_all(dir_);
  }
  Agent* agent() { return agent_.get(); }
  const std::string& dir() const { return dir_; }
  static hal::Paths Paths(const std::string& dir) {
    hal::Paths p;
    p.sysfs = dir + "/sysfs";
    return p;
  }
  void SetCounter(const std::string& dev, const std::string& file, const std::string& value) {
    std::ofstream(absl::StrCat(dir_, "/sysfs/class/infiniband/", dev, "/ports/1/hw_counters/",
                               file),
                  std::ios::trunc)
        << value << "\n";
  }

 private:
  std::string dir_;
  NodeBackends backends_;
  std::unique_ptr<Agent> agent_;
};

constexpr char kObserve[] = "apiVersion: roced/v1\nkind: NodeConfig\nmode: observe\n";

class CountersServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    node_ = std::make_unique<AgentOnFixtureCopy>(kObserve);
    ServerOptions sopts;
    sopts.grpc_listen = "127.0.0.1:0";
    sopts.insecure = true;
    sopts.socket_path = node_->dir() + "/roced.sock";
    sopts.metrics_listen = "127.0.0.1:0";
    counters_ = std::make_unique<CountersRuntime>(
        node_->agent(), CountersRuntimeOptions{.paths = node_->Paths(node_->dir()), .clock = &clock_});
    counters_->Start();
    server_ = std::make_unique<Server>(ServedParts{node_->agent(), counters_.get(), nullptr, node_->agent()->registry()}, sopts);
    ASSERT_TRUE(server_->Start().ok());
    stub_ = roced::v1::Agent::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", server_->grpc_port()), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    server_->Shutdown(absl::Seconds(1));
    server_.reset();
    counters_->Stop();
    counters_.reset();
    node_.reset();
  }
  grpc::Status Get(const roced::v1::GetCountersRequest& req, roced::v1::GetCountersResponse* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    return stub_->GetCounters(&ctx, req, resp);
  }
  static const roced::v1::Counter* Find(const roced::v1::GetCountersResponse& r,
                                        const std::string& device, const std::string& source,
                                        const std::string& name) {
    for (const auto& s : r.sets()) {
      if (s.device() != device || s.source() != source) continue;
      for (const auto& c : s.counters()) {
        if (c.name() == name) return &c;
      }
    }
    return nullptr;
  }

  std::unique_ptr<AgentOnFixtureCopy> node_;
  util::SimulatedClock clock_;  // outlives counters_
  std::unique_ptr<CountersRuntime> counters_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<roced::v1::Agent::Stub> stub_;
};

TEST_F(CountersServerTest, GetCountersGivesValuesThenRatesSinceThePreviousCall) {
  roced::v1::GetCountersResponse first, second;
  ASSERT_TRUE(Get({}, &first).ok());
  EXPECT_TRUE(first.has_at());
  EXPECT_EQ(first.sets_size(), 7);  // 3 mlx5 x (counters, hw_counters) + rxe hw_counters
  const roced::v1::Counter* cnp = Find(first, "mlx5_0", "hw_counters", "cnp_sent");
  ASSERT_NE(cnp, nullptr);
  EXPECT_EQ(cnp->value(), 101201u);
  EXPECT_EQ(cnp->source_name(), "np_cnp_sent");
  EXPECT_FALSE(cnp->has_rate());  // nothing to compare with yet

  node_->SetCounter("mlx5_0", "np_cnp_sent", "102201");  // +1000
  clock_.Advance(absl::Milliseconds(200));
  ASSERT_TRUE(Get({}, &second).ok());
  cnp = Find(second, "mlx5_0", "hw_counters", "cnp_sent");
  ASSERT_NE(cnp, nullptr);
  EXPECT_EQ(cnp->value(), 102201u);
  ASSERT_TRUE(cnp->has_rate());
  EXPECT_DOUBLE_EQ(cnp->rate(), 1000 / 0.2);
  const roced::v1::Counter* steady = Find(second, "rxe0", "hw_counters", "retransmits");
  ASSERT_NE(steady, nullptr);
  ASSERT_TRUE(steady->has_rate());
  EXPECT_EQ(steady->rate(), 0);
}

TEST_F(CountersServerTest, GetCountersFiltersByDeviceOrNetdevAndNamesWhatIsUnknown) {
  roced::v1::GetCountersRequest req;
  roced::v1::GetCountersResponse resp;
  req.set_device("rxe0");
  ASSERT_TRUE(Get(req, &resp).ok());
  ASSERT_EQ(resp.sets_size(), 1);
  EXPECT_EQ(resp.sets(0).netdev(), "eth0");

  req.Clear();
  req.set_netdev("ens1f1");
  ASSERT_TRUE(Get(req, &resp).ok());
  ASSERT_EQ(resp.sets_size(), 2);
  EXPECT_EQ(resp.sets(0).device(), "mlx5_1");

  req.Clear();
  req.set_device("mlx5_9");
  grpc::Status s = Get(req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("mlx5_9"));
  EXPECT_THAT(s.error_message(), HasSubstr("mlx5_0, mlx5_1, mlx5_2, rxe0"));
}

TEST_F(CountersServerTest, MetricsEndpointServesTheCounterFamilies) {
  std::string body = roced::test_util::HttpGet(server_->metrics_port(), "/metrics");
  EXPECT_THAT(body,
              HasSubstr("roced_rdma_cnp_sent_total{device=\"mlx5_0\",port=\"1\",netdev=\"ens1f0\"} "
                        "101201"));
  EXPECT_THAT(body, HasSubstr("roced_rdma_hw_counters_total{device=\"rxe0\",port=\"1\","
                              "netdev=\"eth0\",counter=\"ack_deferred\"} 13"));
  // A fixture tree's netdevs are not the running kernel's: no ethtool, no
  // watchdog series.
  EXPECT_THAT(body, Not(HasSubstr("roced_pfc_")));
}

// Every read reports one more rx pause frame on priority 3 of `netdev`
// while `pausing` is set: a storm as the watchdog sees it.
class FakeNetdevStatsReaderForTest : public hal::NetdevStatsReader {
 public:
  explicit FakeNetdevStatsReaderForTest(std::string netdev) : netdev_(std::move(netdev)) {}
  std::atomic<bool> pausing{true};
  absl::StatusOr<std::vector<hal::EthtoolStat>> ReadStats(const std::string& netdev) override {
    if (netdev != netdev_) return absl::NotFoundError(netdev);
    uint64_t n = pausing.load() ? count_.fetch_add(1) + 1 : count_.load();
    return std::vector<hal::EthtoolStat>{{"rx_bytes", 1}, {"rx_prio3_pause", n}};
  }

 private:
  const std::string netdev_;
  std::atomic<uint64_t> count_{0};
};

bool NextStorm(Subscription* sub, roced::v1::PfcStormEvent* out) {
  roced::v1::StateEvent ev;
  auto deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    if (!sub->Next(&ev, absl::Milliseconds(100))) continue;
    if (ev.has_pfc_storm()) {
      *out = ev.pfc_storm();
      return true;
    }
  }
  return false;
}

double StormGauge(CountersRuntime* runtime, const std::string& netdev, const std::string& prio) {
  for (const auto& c : runtime->Collectables()) {
    for (const auto& f : c->Collect()) {
      if (f.name != "roced_pfc_storm") continue;
      for (const auto& m : f.metric) {
        if (m.label[0].value == netdev && m.label[1].value == prio) return m.gauge.value;
      }
    }
  }
  return -1;
}

TEST(CountersRuntimeTest, StormIsPublishedOnWatchStateExportedAndCleared) {
  AgentOnFixtureCopy node(std::string(kObserve) +
                          "pfc_watchdog: {poll_interval: 10ms, detection_time: 30ms, "
                          "restoration_time: 30ms}\n");
  FakeNetdevStatsReaderForTest reader("ens1f0");
  auto sub = node.agent()->Subscribe();
  CountersRuntime runtime(node.agent(), {.paths = node.Paths(node.dir()), .netdev_stats = &reader});
  runtime.Start();

  roced::v1::PfcStormEvent storm;
  ASSERT_TRUE(NextStorm(sub.get(), &storm));
  EXPECT_EQ(storm.netdev(), "ens1f0");
  EXPECT_EQ(storm.priority(), 3u);
  EXPECT_TRUE(storm.stormed());
  EXPECT_GT(storm.rx_pause_frames(), 0u);
  EXPECT_EQ(StormGauge(&runtime, "ens1f0", "3"), 1);
  EXPECT_EQ(runtime.watchdog()->options().detection_time, absl::Milliseconds(30));

  reader.pausing.store(false);
  ASSERT_TRUE(NextStorm(sub.get(), &storm));
  EXPECT_FALSE(storm.stormed());
  EXPECT_EQ(StormGauge(&runtime, "ens1f0", "3"), 0);

  // The same reader feeds the ethtool families.
  roced::v1::GetCountersRequest req;
  req.set_netdev("ens1f0");
  auto counters = runtime.GetCounters(req);
  ASSERT_TRUE(counters.ok()) << counters.status();
  bool found = false;
  for (const auto& s : counters->sets()) {
    if (s.source() != "ethtool") continue;
    ASSERT_EQ(s.counters_size(), 1);
    EXPECT_EQ(s.counters(0).name(), "pfc_pause_frames_received");
    EXPECT_EQ(s.counters(0).priority(), 3u);
    found = true;
  }
  EXPECT_TRUE(found);
  runtime.Stop();
  node.agent()->Unsubscribe(sub);
}

// The refresh follows the agent's state as it changes, not at its periodic
// pass (an hour here): a config that changes the watchdog's times reaches
// the watchdog at once (the thread does not poll the state for changes).
TEST(CountersRuntimeTest, AStateChangeReachesTheWatchdogWithoutWaitingForThePeriodicPass) {
  AgentOnFixtureCopy node(kObserve);
  FakeNetdevStatsReaderForTest reader("ens1f0");
  CountersRuntime runtime(node.agent(), {.paths = node.Paths(node.dir()),
                                         .netdev_stats = &reader,
                                         .refresh_interval = absl::Hours(1)});
  runtime.Start();
  EXPECT_EQ(runtime.watchdog()->options().detection_time, absl::Milliseconds(200));
  roced::v1::ApplyConfigRequest req;
  roced::v1::NodeConfig* config = req.mutable_config();
  config->set_api_version("roced/v1");
  config->set_kind("NodeConfig");
  config->set_mode(roced::v1::MODE_OBSERVE);
  config->mutable_pfc_watchdog()->mutable_detection_time()->set_nanos(50'000'000);
  absl::StatusOr<roced::v1::ApplyConfigResponse> applied = node.agent()->ApplyConfig(req);
  ASSERT_TRUE(applied.ok()) << applied.status();
  // The runtime takes the config up on its state listener's thread: a poll
  // of that, not a wait for time to pass.
  ASSERT_TRUE(roced::test_util::WaitFor(
      [&] { return runtime.watchdog()->options().detection_time == absl::Milliseconds(50); }, absl::Seconds(10)));
  EXPECT_EQ(runtime.watchdog()->options().detection_time, absl::Milliseconds(50));
  runtime.Stop();
}

// What the diagnosis gets from the runtime, over the real Diagnose RPC:
// carrier changes read from the tree when asked become link flaps (the
// periodic pass, an hour here, need not have run since), and
// with samples younger than a minute the pause/ECN check says it has no
// window yet.
TEST(CountersRuntimeTest, DiagnoseSeesLinkFlapsAndSaysWhenThereIsNoCounterWindowYet) {
  AgentOnFixtureCopy node(kObserve);
  const std::string carrier = node.dir() + "/sysfs/class/net/ens1f0/carrier_changes";
  std::ofstream(carrier) << "5\n";
  CountersRuntime runtime(node.agent(), {.paths = node.Paths(node.dir()), .refresh_interval = absl::Hours(1)});
  runtime.Start();
  std::ofstream(carrier, std::ios::trunc) << "9\n";  // two flaps since the agent started
  auto changes = [&] {
    for (const auto& f : runtime.LinkFlaps()) {
      if (f.netdev == "ens1f0") return f.changes;
    }
    return size_t{0};
  };
  ASSERT_EQ(changes(), 4u);

  ServerOptions sopts;
  sopts.grpc_listen = "127.0.0.1:0";
  sopts.insecure = true;
  sopts.socket_path = node.dir() + "/roced.sock";
  sopts.metrics_listen = "127.0.0.1:0";
  Server server(ServedParts{node.agent(), &runtime, nullptr, node.agent()->registry()}, sopts);
  ASSERT_TRUE(server.Start().ok());
  auto stub = roced::v1::Agent::NewStub(grpc::CreateChannel(absl::StrCat("127.0.0.1:", server.grpc_port()),
                                                            grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  roced::v1::DiagnoseRequest req;
  req.add_checks("link_flaps");
  req.add_checks("pause_without_ecn");
  roced::v1::DiagnoseResponse resp;
  ASSERT_TRUE(stub->Diagnose(&ctx, req, &resp).ok());
  ASSERT_EQ(resp.findings_size(), 2) << resp.DebugString();
  EXPECT_EQ(resp.findings(0).check(), "link_flaps");
  EXPECT_EQ(resp.findings(0).object(), "ens1f0");
  EXPECT_THAT(resp.findings(0).summary(), HasSubstr("4 carrier changes in the last 6h"));
  EXPECT_THAT(resp.findings(0).detail(), HasSubstr("the kernel counts 9 carrier changes"));
  EXPECT_EQ(resp.findings(1).check(), "pause_without_ecn");
  EXPECT_EQ(resp.findings(1).severity(), roced::v1::SEVERITY_INFO);
  EXPECT_THAT(resp.findings(1).summary(), HasSubstr("no counter window yet"));
  server.Shutdown(absl::Seconds(1));
  runtime.Stop();
}

// A device the state lists whose counter files are not held (they
// answered "gone" while rxe0 was removed and re-added between two
// discovery passes; or its counter directories appeared after it did) has
// them opened at the runtime's own periodic pass (10 s by default), with no
// scrape or GetCounters to make the files rescan: a node nobody reads must
// not hold them closed and open them at the first read (the fd count of
// fault_peer_restart_loop's baseline would move under it).
TEST(CountersRuntimeTest, CounterFilesOfAListedDeviceAreOpenedWithoutAReader) {
  AgentOnFixtureCopy node(kObserve);
  const std::string ib = node.dir() + "/sysfs/class/infiniband/";
  CountersRuntime runtime(node.agent(), {.paths = node.Paths(node.dir())});
  runtime.Start();
  const size_t all = runtime.OpenCounterFiles();
  ASSERT_GT(all, 0u);
  runtime.Stop();
  // rxe0 is discovered (the state lists it) but its counters are not there
  // when the files are first listed.
  fs::rename(ib + "rxe0/ports/1/hw_counters", node.dir() + "/rxe0-hw_counters");
  util::SimulatedClock clock;
  CountersRuntime later(node.agent(),
                        {.paths = node.Paths(node.dir()), .refresh_interval = absl::Seconds(10), .clock = &clock});
  later.Start();
  const size_t without = later.OpenCounterFiles();
  ASSERT_LT(without, all);
  fs::rename(node.dir() + "/rxe0-hw_counters", ib + "rxe0/ports/1/hw_counters");
  // The periodic refresh (a state change may wake one sooner, as it should).
  ASSERT_TRUE(clock.AwaitWaiters(1));
  ASSERT_TRUE(clock.Tick(absl::Seconds(10), 0));
  // The refresh pass the step woke runs on its own thread: a poll of it.
  EXPECT_TRUE(roced::test_util::WaitFor([&] { return later.OpenCounterFiles() == all; }, absl::Seconds(10)))
      << "rxe0's counter files, back, are still not open";
  later.Stop();
}

}  // namespace
}  // namespace roced::agent

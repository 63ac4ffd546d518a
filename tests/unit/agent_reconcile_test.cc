// The agent's desired-state lifecycle on top of the reconciler: ApplyConfig
// (dry run, stale writers, failures that change nothing), drift in enforce
// and observe mode, provisional configs that roll back by themselves, and
// persistence across restarts. The node is FakeNodeIoForTest (no DCB driver
// on this machine); interfaces resolve against the fixture sysfs tree. Time
// is a SimulatedClock the tests move: a confirm deadline or a periodic pass
// comes when the clock passes it, and not before.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "agent/core/agent.h"
#include "fake_node_io_for_test.h"
#include "google/protobuf/util/json_util.h"
#include "model/config_yaml.h"
#include "util/clock.h"
#include "util/fs.h"

#include "test_util.h"

namespace roced::agent {
namespace {

using reconcile::Field;
using reconcile::FakeNodeIoForTest;
using ::testing::HasSubstr;

roced::v1::NodeConfig Config(const std::string& body) {
  std::vector<roced::v1::ValidationIssue> issues;
  auto d = model::DecodeYamlConfig("apiVersion: roced/v1\nkind: NodeConfig\n" + body, &issues);
  EXPECT_TRUE(d.ok()) << model::FormatIssues("cfg", issues);
  return d->config;
}

const char kPfc3[] =
    "interfaces:\n  - match: {netdev: eth0}\n    mtu: 4200\n"
    "    qos: {trust: dscp, dscp_to_priority: {26: 3}, pfc: {priorities: [3]}}\n";

class AgentReconcileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = roced::test_util::MakeTempDir("roced-rec");
    reconcile::InterfaceObserved eth0;
    eth0.mtu = 1500;
    eth0.dscp = reconcile::DscpMap{};
    eth0.pfc = reconcile::Pfc{};
    io_.interfaces["eth0"] = eth0;
    Start();
  }
  void TearDown() override {
    agent_.reset();
    std::filesystem::remove_all(dir_);
  }
  // config_optional: a missing config file is no error; the agent resumes
  // what the state dir holds.
  void Start(const std::string& config_path = "", bool loop = false, bool config_optional = false,
             absl::Duration resource_backoff = AgentOptions().resource_backoff) {
    AgentOptions o;
    o.resource_backoff = resource_backoff;
    o.config_optional = config_optional;
    o.paths.sysfs = std::string(ROCED_FIXTURES) + "/sysfs";
    if (!procfs_.empty()) o.paths.procfs = procfs_;
    o.state_dir = dir_;
    o.config_path = config_path;
    o.use_netlink = false;
    o.backends.node_io = &io_;
    o.backends.qos_view = true;
    o.reconcile = loop;
    o.clock = &clock_;
    agent_ = std::make_unique<Agent>(o);
    if (!config_path.empty()) {
      ASSERT_TRUE(agent_->LoadConfig(true).ok());
    }
    agent_->Start();
  }
  // Writes <dir>/roced.yaml with `body` under the apiVersion/kind header;
  // returns its path.
  std::string WriteConfigFile(const std::string& body) {
    const std::string file = dir_ + "/roced.yaml";
    FILE* f = fopen(file.c_str(), "w");
    fputs(("apiVersion: roced/v1\nkind: NodeConfig\n" + body).c_str(), f);
    fclose(f);
    return file;
  }
  absl::StatusOr<roced::v1::ApplyConfigResponse> Apply(const std::string& body, bool dry_run = false) {
    roced::v1::ApplyConfigRequest req;
    *req.mutable_config() = Config(body);
    req.set_dry_run(dry_run);
    return agent_->ApplyConfig(req);
  }

  // Moves the clock by `d`; returns once every pass it woke, and every pass
  // triggered meanwhile, has run and the agent's loops wait again.
  void Step(absl::Duration d) {
    ASSERT_TRUE(agent_->AwaitIdle());  // every pass asked for so far has run first
    ASSERT_TRUE(clock_.Tick(d, 0));
    ASSERT_TRUE(agent_->AwaitIdle());
  }
  // Steps the clock `step` at a time until `cond` holds; false once
  // `limit` of simulated time has passed without it.
  bool StepUntil(const std::function<bool()>& cond, absl::Duration limit = absl::Minutes(5),
                 absl::Duration step = absl::Milliseconds(100)) {
    if (!agent_->AwaitIdle()) return false;
    for (absl::Duration t = absl::ZeroDuration(); !cond(); t += step) {
      if (t >= limit || !clock_.Tick(step, 0) || !agent_->AwaitIdle()) return false;
    }
    return true;
  }

  std::string dir_;
  std::string procfs_;  // empty: /proc
  FakeNodeIoForTest io_;
  util::SimulatedClock clock_;  // outlives agent_
  std::unique_ptr<Agent> agent_;
};

TEST_F(AgentReconcileTest, HugepagePoolsBeyondTheNodesMemoryAreRefusedAndChangeNothing) {
  procfs_ = dir_ + "/proc";
  std::filesystem::create_directories(procfs_);
  std::ofstream(procfs_ + "/meminfo") << "MemTotal:        2097152 kB\nMemFree:          1048576 kB\n";
  agent_.reset();
  Start();
  const reconcile::HugepagePool gig{1048576, -1};
  io_.hugepages[gig] = 0;
  const uint64_t generation = agent_->State().config().generation();
  auto refused = Apply("hugepages: [{size: 1Gi, count: 2}]\n");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(),
            "hugepages: the pools reserve 2147483648 bytes; allowed at most 1932735283 (90% of the node's "
            "2147483648 bytes of memory, MemTotal)");
  EXPECT_EQ(io_.hugepages[gig], std::optional<uint64_t>(0));
  EXPECT_EQ(agent_->State().config().generation(), generation);
  // A config file asking the same is rejected at load, naming the file.
  const std::string file = WriteConfigFile("hugepages: [{size: 1Gi, count: 2}]\n");
  agent_.reset();
  AgentOptions o;
  o.paths.sysfs = std::string(ROCED_FIXTURES) + "/sysfs";
  o.paths.procfs = procfs_;
  o.state_dir = dir_;
  o.config_path = file;
  o.use_netlink = false;
  o.backends.node_io = &io_;
  o.reconcile = false;
  o.clock = &clock_;
  agent_ = std::make_unique<Agent>(o);
  absl::Status loaded = agent_->LoadConfig(true);
  EXPECT_THAT(std::string(loaded.message()), ::testing::HasSubstr(file + ": hugepages: the pools reserve"));
  // Within the share it is applied.
  EXPECT_TRUE(Apply("hugepages: [{size: 1Gi, count: 1}]\n").ok());
}

TEST_F(AgentReconcileTest, DryRunReturnsThePlanAndChangesNothing) {
  auto r = Apply(kPfc3, /*dry_run=*/true);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->plan().steps_size(), 3);  // mtu, dscp, pfc
  EXPECT_EQ(io_.writes, 0);
  EXPECT_EQ(agent_->State().config().generation(), 0u);
}

// An apply that went through but cannot be recorded (here accepted.json
// cannot be replaced) must not leave the node changed with no record of
// why: the node is put back and the caller told.
TEST_F(AgentReconcileTest, ApplyThatCannotBePersistedPutsTheNodeBack) {
  std::filesystem::create_directory(dir_ + "/accepted.json");
  auto r = Apply("interfaces:\n  - match: {netdev: eth0}\n    mtu: 9000\n");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("cannot persist the accepted config"));
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("put back as it was"));
  EXPECT_EQ(io_.Interface("eth0").mtu, std::optional<uint32_t>(1500));
  EXPECT_EQ(agent_->State().config().generation(), 0u);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/apply-journal.json")) << "the values are back: no journal";
}

// The "state" component of GetState (and roced_component_healthy).
std::optional<roced::v1::ComponentHealth> StateHealth(const roced::v1::NodeState& state) {
  for (const auto& c : state.agent().components()) {
    if (c.name() == "state") return c;
  }
  return std::nullopt;
}

std::vector<std::string> SetAside(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("accepted.json.bad-", 0) == 0) out.push_back(e.path().string());
  }
  return out;
}

// A truncated accepted.json (a config pushed over gRPC) is not silently
// overwritten: it is kept aside, the agent says so, and the generation
// does not go back (a controller's expected_generation is never reused).
TEST_F(AgentReconcileTest, CorruptAcceptedJsonIsKeptAsideReportedAndGenerationsGoOn) {
  ASSERT_TRUE(Apply(kPfc3).ok());
  ASSERT_TRUE(Apply("interfaces:\n  - match: {netdev: eth0}\n    mtu: 2000\n").ok());
  agent_.reset();
  const std::string text = *util::ReadFile(dir_ + "/accepted.json");
  ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/accepted.json", text.substr(0, text.size() / 2)).ok());
  Start(dir_ + "/missing.yaml", /*loop=*/false, /*config_optional=*/true);

  ASSERT_EQ(SetAside(dir_).size(), 1u);
  EXPECT_EQ(*util::ReadFile(SetAside(dir_)[0]), text.substr(0, text.size() / 2));
  std::optional<roced::v1::ComponentHealth> health = StateHealth(agent_->State());
  ASSERT_TRUE(health.has_value());
  EXPECT_FALSE(health->healthy());
  EXPECT_THAT(health->message(), HasSubstr("accepted.json does not parse"));
  EXPECT_THAT(health->message(), HasSubstr("kept as " + SetAside(dir_)[0]));
  EXPECT_THAT(health->message(), HasSubstr("generations continue from 3"));

  roced::v1::ApplyConfigRequest req;
  *req.mutable_config() = Config(kPfc3);
  req.set_expected_generation(0);
  EXPECT_EQ(agent_->ApplyConfig(req).status().code(), absl::StatusCode::kAborted) << "generation 0 is long gone";
  req.set_expected_generation(2);
  auto r = agent_->ApplyConfig(req);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->generation(), 3u);
  EXPECT_TRUE(StateHealth(agent_->State())->healthy()) << "a config pushed since: the operator acted";
}

// accepted.json gone altogether: the generation file still has the floor.
TEST_F(AgentReconcileTest, LostAcceptedJsonDoesNotTakeTheGenerationBack) {
  ASSERT_TRUE(Apply(kPfc3).ok());
  ASSERT_TRUE(Apply("interfaces:\n  - match: {netdev: eth0}\n    mtu: 2000\n").ok());
  agent_.reset();
  std::filesystem::remove(dir_ + "/accepted.json");
  const std::string file = WriteConfigFile("interfaces:\n  - match: {netdev: eth0}\n    mtu: 3000\n");
  Start(file);
  EXPECT_EQ(agent_->State().config().generation(), 3u);
  EXPECT_EQ(agent_->State().config().source(), roced::v1::CONFIG_SOURCE_FILE);
}

// A persisted config this agent's rules reject (a downgraded agent, or a
// file edited by hand) is not taken up: set aside, reported, node untouched.
TEST_F(AgentReconcileTest, PersistedConfigThatNoLongerValidatesIsSetAside) {
  roced::v1::AcceptedConfig bad;
  bad.set_generation(5);
  bad.set_source(roced::v1::CONFIG_SOURCE_GRPC);
  *bad.mutable_config() = Config("interfaces:\n  - match: {netdev: eth0}\n    mtu: 9000\n");
  bad.mutable_config()->mutable_interfaces(0)->mutable_qos()->mutable_pfc()->add_priorities(9);
  std::string json;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(bad, &json).ok());
  agent_.reset();
  ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/accepted.json", json).ok());
  Start(dir_ + "/missing.yaml", /*loop=*/true, /*config_optional=*/true);
  Step(absl::Seconds(30));  // a periodic pass runs, and writes nothing
  EXPECT_EQ(io_.Writes(), 0);
  EXPECT_EQ(io_.Interface("eth0").mtu, std::optional<uint32_t>(1500));
  ASSERT_EQ(SetAside(dir_).size(), 1u);
  std::optional<roced::v1::ComponentHealth> health = StateHealth(agent_->State());
  ASSERT_TRUE(health.has_value());
  EXPECT_FALSE(health->healthy());
  EXPECT_THAT(health->message(), HasSubstr("holds a config that does not validate"));
  EXPECT_THAT(health->message(), HasSubstr("interfaces[0].qos.pfc.priorities[0]"));
  roced::v1::ApplyConfigRequest req;
  *req.mutable_config() = Config(kPfc3);
  req.set_expected_generation(5);
  auto r = agent_->ApplyConfig(req);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->generation(), 6u);
}

// A provisional config pushed onto a node with nothing accepted returns to
// "nothing managed" (an empty config): that is no invalid state to set aside.
TEST_F(AgentReconcileTest, ProvisionalOverNothingResumesAfterARestart) {
  roced::v1::ApplyConfigRequest req;
  *req.mutable_config() = Config(kPfc3);
  req.mutable_confirm_timeout()->set_seconds(600);
  ASSERT_TRUE(agent_->ApplyConfig(req).ok());
  agent_.reset();
  Start(dir_ + "/missing.yaml", /*loop=*/false, /*config_optional=*/true);
  EXPECT_TRUE(SetAside(dir_).empty());
  EXPECT_TRUE(StateHealth(agent_->State())->healthy()) << StateHealth(agent_->State())->message();
  EXPECT_EQ(agent_->State().config().generation(), 1u);
  EXPECT_TRUE(agent_->State().config().has_confirm_deadline());
  ASSERT_TRUE(agent_->ConfirmConfig(1).ok());
}

// A state directory that cannot be created does not stop the agent (an
// exit would have systemd restart it in a loop): the config file is
// taken up, a push is refused with the node as it was, and the agent says
// why until the directory can be written again.
TEST_F(AgentReconcileTest, UnwritableStateDirectoryServesDegraded) {
  agent_.reset();
  const std::string file = WriteConfigFile("interfaces:\n  - match: {netdev: eth0}\n    mtu: 2000\n");
  ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/blocker", "").ok());
  const std::string config_dir = dir_;
  dir_ = config_dir + "/blocker/state";  // ENOTDIR whoever we are
  Start(file);
  dir_ = config_dir;  // for TearDown
  agent_->Reconcile("test");
  EXPECT_EQ(io_.Interface("eth0").mtu, std::optional<uint32_t>(2000)) << "the file's config is enforced";
  EXPECT_EQ(agent_->State().config().generation(), 1u);
  std::optional<roced::v1::ComponentHealth> health = StateHealth(agent_->State());
  ASSERT_TRUE(health.has_value());
  EXPECT_FALSE(health->healthy());
  EXPECT_THAT(health->message(), HasSubstr("state directory not writable"));
  EXPECT_THAT(health->message(), HasSubstr(config_dir + "/blocker/state"));

  auto r = Apply("interfaces:\n  - match: {netdev: eth0}\n    mtu: 9000\n");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_EQ(io_.Interface("eth0").mtu, std::optional<uint32_t>(2000));
  EXPECT_EQ(agent_->State().config().generation(), 1u);

  std::filesystem::remove(config_dir + "/blocker");
  std::filesystem::create_directories(config_dir + "/blocker/state");
  r = Apply("interfaces:\n  - match: {netdev: eth0}\n    mtu: 9000\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->generation(), 2u);
  EXPECT_TRUE(StateHealth(agent_->State())->healthy()) << StateHealth(agent_->State())->message();
  EXPECT_TRUE(std::filesystem::exists(config_dir + "/blocker/state/accepted.json"));
}

TEST_F(AgentReconcileTest, ApplyThenReapplyGivesAnEmptyPlan) {
  auto r = Apply(kPfc3);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->result().success());
  EXPECT_EQ(r->generation(), 1u);
  EXPECT_EQ(io_.Interface("eth0").pfc->enabled, 1u << 3);
  EXPECT_EQ(agent_->State().config().source(), roced::v1::CONFIG_SOURCE_GRPC);
  EXPECT_TRUE(agent_->State().config().converged());
  auto again = Apply(kPfc3);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->plan().steps_size(), 0);
}

TEST_F(AgentReconcileTest, StaleExpectedGenerationIsAborted) {
  ASSERT_TRUE(Apply(kPfc3).ok());
  roced::v1::ApplyConfigRequest req;
  *req.mutable_config() = Config(kPfc3);
  req.set_expected_generation(0);
  auto r = agent_->ApplyConfig(req);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("accepted generation is 1"));
}

TEST_F(AgentReconcileTest, MatchingExpectedGenerationIsAccepted) {
  roced::v1::ApplyConfigRequest req;
  *req.mutable_config() = Config(kPfc3);
  req.set_expected_generation(0);  // a fresh node: nothing accepted yet
  auto first = agent_->ApplyConfig(req);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->generation(), 1u);
  *req.mutable_config() = Config("interfaces:\n  - match: {netdev: eth0}\n    mtu: 9000\n");
  req.set_expected_generation(1);
  auto second = agent_->ApplyConfig(req);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->result().success());
  EXPECT_EQ(second->generation(), 2u);
  EXPECT_EQ(agent_->State().config().generation(), 2u);
  EXPECT_EQ(io_.Interface("eth0").mtu, std::optional<uint32_t>(9000));
}

TEST_F(AgentReconcileTest, InvalidConfigAndUnknownInterfaceAreRejectedNamingTheField) {
  auto bad = Apply("interfaces:\n  - match: {netdev: eth0}\n    qos: {pfc: {priorities: [9]}}\n");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("interfaces[0].qos.pfc.priorities[0]"));
  auto unknown = Apply("interfaces:\n  - match: {netdev: eth7}\n    mtu: 9000\n");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("interfaces[0].match.netdev"));
  EXPECT_EQ(io_.writes, 0);
}

TEST_F(AgentReconcileTest, FailedApplyLeavesNodeAndGenerationAsBefore) {
  io_.fail[Field::kPfc] = absl::InternalError("eth0: set PFC refused by the driver");
  auto r = Apply(kPfc3);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->result().success());
  EXPECT_TRUE(r->result().rolled_back());
  EXPECT_EQ(r->generation(), 0u);
  EXPECT_EQ(io_.Interface("eth0").mtu, std::optional<uint32_t>(1500));
  EXPECT_EQ(io_.Interface("eth0").dscp->size(), 0u);
  EXPECT_EQ(agent_->State().config().generation(), 0u);
}

TEST_F(AgentReconcileTest, DriftIsCorrectedInEnforceModeAndReported) {
  ASSERT_TRUE(Apply(kPfc3).ok());
  auto sub = agent_->Subscribe();
  io_.interfaces["eth0"].pfc->enabled = 0;  // someone ran `dcb pfc set ... 3:off`
  auto result = agent_->Reconcile("test");
  EXPECT_TRUE(result.success());
  EXPECT_EQ(io_.Interface("eth0").pfc->enabled, 1u << 3);
  roced::v1::StateEvent ev;
  bool saw = false;
  while (sub->Next(&ev, absl::Milliseconds(100))) {
    if (ev.has_drift()) {
      saw = true;
      EXPECT_EQ(ev.drift().field().field(), "qos.pfc");
      EXPECT_TRUE(ev.drift().corrected());
    }
  }
  EXPECT_TRUE(saw);
  EXPECT_TRUE(agent_->State().config().converged());
}

// Status shows every RoCE port's QoS (the fixture tree's four) as the node
// has it, with no config and with one that manages only eth0's MTU: PFC,
// trust and the DSCP map it does not manage are still shown, as observed,
// and follow the node when it changes.
TEST_F(AgentReconcileTest, EveryRocePortsQosIsPublishedWhetherOrNotTheConfigManagesIt) {
  io_.Update("eth0", [](reconcile::InterfaceObserved& o) {
    o.dscp = reconcile::DscpMap{{26, 3}};
    o.pfc = reconcile::Pfc{1 << 3, 0};
  });
  auto qos_of = [this](const std::string& netdev) {
    const roced::v1::NodeState state = agent_->State();
    for (const auto& q : state.interface_qos()) {
      if (q.netdev() == netdev) return q;
    }
    ADD_FAILURE() << netdev << " not in interface_qos";
    return roced::v1::InterfaceQos();
  };
  agent_->Reconcile("no config yet");
  std::set<std::string> ports;
  const roced::v1::NodeState state = agent_->State();
  for (const auto& q : state.interface_qos()) ports.insert(q.rdma_device() + "/" + q.netdev());
  EXPECT_EQ(ports, (std::set<std::string>{"mlx5_0/ens1f0", "mlx5_1/ens1f1", "mlx5_2/ens2f0", "rxe0/eth0"}));
  EXPECT_THAT(qos_of("eth0").pfc().priorities(), ::testing::ElementsAre(3));
  EXPECT_EQ(qos_of("eth0").trust(), roced::v1::TRUST_DSCP);
  EXPECT_TRUE(qos_of("eth0").managed().empty());

  ASSERT_TRUE(Apply("interfaces:\n  - match: {netdev: eth0}\n    mtu: 4200\n").ok());
  EXPECT_THAT(qos_of("eth0").managed(), ::testing::ElementsAre("mtu"));
  EXPECT_EQ(qos_of("eth0").mtu(), 4200u);
  EXPECT_THAT(qos_of("eth0").pfc().priorities(), ::testing::ElementsAre(3));
  EXPECT_EQ(qos_of("eth0").dscp().dscp_to_priority().at(26), 3u);

  // Someone runs `dcb pfc set dev eth0 prio-pfc 3:off 4:on` and deletes the
  // DSCP entry: nothing to correct (unmanaged), but status follows.
  io_.Update("eth0", [](reconcile::InterfaceObserved& o) {
    o.dscp = reconcile::DscpMap{};
    o.pfc = reconcile::Pfc{1 << 4, 0};
  });
  const uint64_t version = agent_->StateVersion();
  agent_->Reconcile("periodic");
  EXPECT_GT(agent_->StateVersion(), version);
  EXPECT_THAT(qos_of("eth0").pfc().priorities(), ::testing::ElementsAre(4));
  EXPECT_EQ(qos_of("eth0").trust(), roced::v1::TRUST_PCP);
  EXPECT_EQ(io_.Writes(), 1) << "only the MTU was written";
}

TEST_F(AgentReconcileTest, DriftIsOnlyReportedInObserveMode) {
  ASSERT_TRUE(Apply(std::string("mode: observe\n") + kPfc3).ok());
  // Observe mode accepted the config without writing anything.
  EXPECT_EQ(io_.writes, 0);
  agent_->Reconcile("test");
  EXPECT_EQ(io_.Interface("eth0").pfc->enabled, 0u);
  auto state = agent_->State();
  EXPECT_FALSE(state.config().converged());
  bool drifted = false;
  for (const auto& f : state.fields()) drifted |= f.field() == "qos.pfc" && f.sync() == roced::v1::FIELD_SYNC_DRIFTED;
  EXPECT_TRUE(drifted);
}

TEST_F(AgentReconcileTest, ProvisionalConfigRollsBackWithoutConfirm) {
  agent_.reset();
  Start("", /*loop=*/true);
  ASSERT_TRUE(Apply("interfaces:\n  - match: {netdev: eth0}\n    mtu: 2000\n").ok());
  roced::v1::ApplyConfigRequest req;
  *req.mutable_config() = Config("interfaces:\n  - match: {netdev: eth0}\n    mtu: 9000\n");
  req.mutable_confirm_timeout()->set_nanos(300000000);
  auto r = agent_->ApplyConfig(req);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->has_confirm_deadline());
  EXPECT_EQ(io_.Interface("eth0").mtu, std::optional<uint32_t>(9000));
  Step(absl::Milliseconds(200));
  EXPECT_EQ(agent_->State().config().generation(), 2u) << "rolled back 100 ms before its deadline";
  // Accepting the previous config comes first, writing the node after it.
  ASSERT_TRUE(StepUntil([&] {
    return agent_->State().config().generation() >= 3 && io_.Interface("eth0").mtu == std::optional<uint32_t>(2000);
  }, absl::Milliseconds(200))) << "not rolled back within 100 ms of its deadline";
  auto state = agent_->State();
  EXPECT_EQ(state.config().generation(), 3u);
  EXPECT_EQ(state.config().source(), roced::v1::CONFIG_SOURCE_CONFIRM_TIMEOUT);
  EXPECT_EQ(state.config().last_rollback().reason(), "confirm_timeout");
  EXPECT_EQ(state.config().last_rollback().generation(), 2u);
  EXPECT_EQ(state.config().last_rollback().returned_to(), 3u);
  EXPECT_EQ(io_.Interface("eth0").mtu, std::optional<uint32_t>(2000));
}

// RollbackConfig: the provisional config is left at once, long before its
// deadline, exactly as the deadline would leave it (the node written back,
// the rollback on record with who asked); asked again, or for another
// generation, it says why.
TEST_F(AgentReconcileTest, ProvisionalConfigRolledBackOnRequest) {
  agent_.reset();
  Start("", /*loop=*/false);
  ASSERT_TRUE(Apply("interfaces:\n  - match: {netdev: eth0}\n    mtu: 2000\n").ok());
  EXPECT_EQ(agent_->RollBackNow(0).status().code(), absl::StatusCode::kFailedPrecondition);
  roced::v1::ApplyConfigRequest req;
  *req.mutable_config() = Config(kPfc3);
  req.mutable_confirm_timeout()->set_seconds(3600);
  ASSERT_TRUE(agent_->ApplyConfig(req).ok());
  ASSERT_EQ(io_.Interface("eth0").mtu, std::optional<uint32_t>(4200));
  EXPECT_EQ(agent_->RollBackNow(7).status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(io_.Interface("eth0").mtu, std::optional<uint32_t>(4200)) << "a refused rollback changed the node";

  auto back = agent_->RollBackNow(2, "admin.test");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->generation(), 2u);
  EXPECT_EQ(back->returned_to(), 3u);
  EXPECT_EQ(back->reason(), "rollback");
  EXPECT_EQ(back->detail(), "asked by admin.test");
  // Written back within the call, not at the next pass.
  EXPECT_EQ(io_.Interface("eth0").mtu, std::optional<uint32_t>(2000));
  auto state = agent_->State();
  EXPECT_EQ(state.config().generation(), 3u);
  EXPECT_EQ(state.config().source(), roced::v1::CONFIG_SOURCE_ROLLBACK);
  EXPECT_FALSE(state.config().has_confirm_deadline());
  EXPECT_EQ(state.config().desired().interfaces(0).mtu(), 2000u);
  EXPECT_EQ(agent_->RollBackNow(0).status().code(), absl::StatusCode::kFailedPrecondition);
  double rollbacks = 0;
  for (const auto& family : agent_->registry()->Collect()) {
    if (family.name != "roced_config_rollbacks_total") continue;
    for (const auto& m : family.metric) {
      if (!m.label.empty() && m.label[0].value == "rollback") rollbacks += m.counter.value;
    }
  }
  EXPECT_EQ(rollbacks, 1);
}

TEST_F(AgentReconcileTest, ProvisionalRollbackRestoresFieldsThePreviousConfigDoesNotManage) {
  agent_.reset();
  Start("", /*loop=*/true);
  // In force: MTU only. The node's DCB state is not managed by it.
  io_.Update("eth0", [](reconcile::InterfaceObserved& i) {
    i.dscp = reconcile::DscpMap{{10, 1}};
    i.pfc = reconcile::Pfc{0x02, 0};
  });
  ASSERT_TRUE(Apply("interfaces:\n  - match: {netdev: eth0}\n    mtu: 2000\n").ok());
  const reconcile::InterfaceObserved before = io_.Interface("eth0");

  // Provisional: MTU and the DSCP map and PFC as well.
  roced::v1::ApplyConfigRequest req;
  *req.mutable_config() = Config(kPfc3);
  req.mutable_confirm_timeout()->set_nanos(300000000);
  ASSERT_TRUE(agent_->ApplyConfig(req).ok());
  EXPECT_EQ(io_.Interface("eth0").pfc, (reconcile::Pfc{0x08, 0}));
  EXPECT_EQ(io_.Interface("eth0").mtu, std::optional<uint32_t>(4200));

  // The restore writes the fields, then drops the journal.
  ASSERT_TRUE(StepUntil([&] {
    return agent_->State().config().generation() >= 3 && io_.Interface("eth0").pfc == before.pfc &&
           !std::filesystem::exists(dir_ + "/apply-journal.json");
  }, absl::Milliseconds(500)));
  EXPECT_EQ(agent_->State().config().source(), roced::v1::CONFIG_SOURCE_CONFIRM_TIMEOUT);
  EXPECT_EQ(io_.Interface("eth0").mtu, before.mtu);
  EXPECT_EQ(io_.Interface("eth0").pfc, before.pfc) << "PFC is not managed by the previous config but was changed";
  EXPECT_EQ(io_.Interface("eth0").dscp, before.dscp);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/apply-journal.json"));
}

TEST_F(AgentReconcileTest, ARestoreThatKeepsFailingIsRetriedThenSupersededByANewApply) {
  agent_.reset();
  Start("", /*loop=*/true);
  roced::v1::ApplyConfigRequest req;
  *req.mutable_config() = Config(kPfc3);
  req.mutable_confirm_timeout()->set_nanos(200000000);
  ASSERT_TRUE(agent_->ApplyConfig(req).ok());
  io_.SetFail(Field::kPfc, absl::UnavailableError("driver refuses PFC"));  // the restore's PFC write fails
  ASSERT_TRUE(StepUntil([&] { return agent_->State().config().generation() >= 2; }, absl::Milliseconds(500)));
  ASSERT_EQ(agent_->State().config().source(), roced::v1::CONFIG_SOURCE_CONFIRM_TIMEOUT);
  Step(absl::Seconds(30));  // a periodic pass: the restore fails again
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/apply-journal.json")) << "a failed restore stays journaled";
  EXPECT_EQ(io_.Interface("eth0").pfc, (reconcile::Pfc{0x08, 0})) << "the restore was rolled back as a whole";

  // A new config arrives while the restore still fails: it wins.
  auto r = Apply("interfaces:\n  - match: {netdev: eth0}\n    mtu: 2000\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->result().success());
  EXPECT_EQ(io_.Interface("eth0").mtu, std::optional<uint32_t>(2000));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/apply-journal.json"));
  // Once the driver accepts PFC again nothing tries to restore it.
  io_.ClearFail();
  const int writes = io_.Writes();
  agent_->Reconcile("test");
  EXPECT_EQ(io_.Writes(), writes);
  EXPECT_EQ(io_.Interface("eth0").pfc, (reconcile::Pfc{0x08, 0}));
}

TEST_F(AgentReconcileTest, ConfirmDropsThePriorValues) {
  roced::v1::ApplyConfigRequest req;
  *req.mutable_config() = Config(kPfc3);
  req.mutable_confirm_timeout()->set_seconds(60);
  ASSERT_TRUE(agent_->ApplyConfig(req).ok());
  std::string persisted = *util::ReadFile(dir_ + "/accepted.json");
  EXPECT_THAT(persisted, HasSubstr("\"prior\""));
  ASSERT_TRUE(agent_->ConfirmConfig(0).ok());
  persisted = *util::ReadFile(dir_ + "/accepted.json");
  EXPECT_THAT(persisted, ::testing::Not(HasSubstr("\"prior\"")));
}

// What a kill -9 in the middle of an apply leaves: the node half-changed,
// accepted.json still the old generation, and the journal. Taken from a
// real apply at the moment it is about to write PFC (after MTU and DSCP).
TEST_F(AgentReconcileTest, RestartAfterDyingMidApplyPutsBackWhatTheApplyChanged) {
  ASSERT_TRUE(Apply("interfaces:\n  - match: {netdev: eth0}\n    mtu: 2000\n").ok());
  const reconcile::InterfaceObserved before = io_.Interface("eth0");
  std::map<std::string, reconcile::InterfaceObserved> node_at_kill;
  std::string journal_at_kill, accepted_at_kill;
  io_.before_write = [&](Field field) {
    if (field != Field::kPfc || !journal_at_kill.empty()) return;
    node_at_kill = io_.interfaces;
    journal_at_kill = *util::ReadFile(dir_ + "/apply-journal.json");
    accepted_at_kill = *util::ReadFile(dir_ + "/accepted.json");
  };
  ASSERT_TRUE(Apply(kPfc3).ok());
  io_.before_write = nullptr;
  ASSERT_FALSE(journal_at_kill.empty()) << "the journal must exist while the apply runs";
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/apply-journal.json")) << "a landed apply removes its journal";

  // "Kill": put the state dir and the node back as they were at that moment.
  agent_.reset();
  io_.interfaces = node_at_kill;
  ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/apply-journal.json", journal_at_kill).ok());
  ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/accepted.json", accepted_at_kill).ok());
  ASSERT_EQ(io_.Interface("eth0").mtu, std::optional<uint32_t>(4200));
  ASSERT_NE(io_.Interface("eth0").dscp, before.dscp);

  Start(dir_ + "/missing.yaml", /*loop=*/true, /*config_optional=*/true);  // resume from the state dir
  ASSERT_TRUE(StepUntil([&] { return !std::filesystem::exists(dir_ + "/apply-journal.json"); }, absl::Seconds(1)));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/apply-journal.json"));
  EXPECT_EQ(agent_->State().config().generation(), 1u);
  EXPECT_EQ(io_.Interface("eth0").mtu, std::optional<uint32_t>(2000));
  EXPECT_EQ(io_.Interface("eth0").dscp, before.dscp) << "DSCP is not managed by generation 1 but was changed";
  EXPECT_EQ(io_.Interface("eth0").pfc, before.pfc);
}

// Two restores due at one start: a journal left by an apply cut short, and
// a provisional config that expired while the agent was down. The journal
// written before the start-up rollback holds both sets of values, so a
// second crash before they are back loses neither.
TEST_F(AgentReconcileTest, TheStartUpRollbackJournalKeepsARestoreAlreadyPending) {
  const std::string file = WriteConfigFile("interfaces:\n  - match: {netdev: eth0}\n    mtu: 2000\n");
  agent_.reset();
  Start(file, /*loop=*/false);
  roced::v1::ApplyConfigRequest req;
  *req.mutable_config() = Config(kPfc3);
  req.mutable_confirm_timeout()->set_seconds(1);
  ASSERT_TRUE(agent_->ApplyConfig(req).ok());
  agent_.reset();
  // What an apply cut short left behind (a field the provisional one did
  // not touch).
  roced::v1::ApplyJournal j;
  auto* p = j.add_prior();
  p->set_field("roce.default_tos");
  p->set_object("rxe0/1");
  p->set_netdev("eth0");
  p->set_rdma_device("rxe0");
  p->set_port(1);
  p->set_number(0);
  std::string json;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(j, &json).ok());
  ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/apply-journal.json", json).ok());
  clock_.Advance(absl::Milliseconds(1200));  // down past the deadline
  Start(file, /*loop=*/false);  // no pass runs: the journal is as start-up left it
  roced::v1::ApplyJournal after;
  auto text = util::ReadFile(dir_ + "/apply-journal.json");
  ASSERT_TRUE(text.ok());
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(*text, &after).ok());
  std::set<std::string> fields;
  for (const auto& v : after.prior()) fields.insert(v.field());
  EXPECT_TRUE(fields.count("roce.default_tos")) << after.DebugString();
  EXPECT_TRUE(fields.count("qos.pfc")) << after.DebugString();
  EXPECT_TRUE(fields.count("mtu")) << after.DebugString();
}

TEST_F(AgentReconcileTest, AJournalOfAnApplyThatLandedIsDiscarded) {
  ASSERT_TRUE(Apply(kPfc3).ok());
  const reconcile::InterfaceObserved applied = io_.Interface("eth0");
  // A journal for generation 1, which accepted.json already has (the agent
  // died after persisting, before removing the journal).
  roced::v1::ApplyJournal j;
  j.set_for_generation(1);
  auto* p = j.add_prior();
  p->set_field("mtu");
  p->set_object("eth0");
  p->set_netdev("eth0");
  p->set_number(1500);
  std::string json;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(j, &json).ok());
  ASSERT_TRUE(util::WriteFileAtomic(dir_ + "/apply-journal.json", json).ok());
  agent_.reset();
  Start(dir_ + "/missing.yaml", /*loop=*/false, /*config_optional=*/true);
  agent_->Reconcile("test");
  EXPECT_EQ(io_.Interface("eth0").mtu, applied.mtu);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/apply-journal.json"));
}

TEST_F(AgentReconcileTest, ResendingTheConfigInForceKeepsTheGeneration) {
  ASSERT_TRUE(Apply(kPfc3).ok());
  const int writes = io_.writes;
  auto again = Apply(kPfc3);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->generation(), 1u);
  EXPECT_EQ(agent_->State().config().generation(), 1u);
  EXPECT_EQ(io_.writes, writes);
  // A different config still gets a new generation.
  auto other = Apply("interfaces:\n  - match: {netdev: eth0}\n    mtu: 2000\n");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->generation(), 2u);
}

TEST_F(AgentReconcileTest, ConfirmedConfigStays) {
  agent_.reset();
  Start("", /*loop=*/true);
  roced::v1::ApplyConfigRequest req;
  *req.mutable_config() = Config("interfaces:\n  - match: {netdev: eth0}\n    mtu: 9000\n");
  req.mutable_confirm_timeout()->set_nanos(400000000);
  ASSERT_TRUE(agent_->ApplyConfig(req).ok());
  auto g = agent_->ConfirmConfig(0);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(*g, 1u);
  Step(absl::Milliseconds(700));  // past the deadline it no longer has
  EXPECT_EQ(agent_->State().config().generation(), 1u);
  EXPECT_EQ(io_.Interface("eth0").mtu, std::optional<uint32_t>(9000));
  EXPECT_EQ(agent_->ConfirmConfig(0).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(AgentReconcileTest, GrpcConfigSurvivesRestartUntilTheFileChanges) {
  auto write = [&](const std::string& body) { return WriteConfigFile(body); };
  const std::string file = dir_ + "/roced.yaml";
  write("interfaces:\n  - match: {netdev: eth0}\n    mtu: 2000\n");
  agent_.reset();
  Start(file);
  EXPECT_EQ(agent_->State().config().generation(), 1u);
  ASSERT_TRUE(Apply("interfaces:\n  - match: {netdev: eth0}\n    mtu: 9000\n").ok());
  EXPECT_EQ(agent_->State().config().generation(), 2u);

  // Restart with the file unchanged: the gRPC config (generation 2) resumes.
  agent_.reset();
  Start(file);
  auto s = agent_->State();
  EXPECT_EQ(s.config().generation(), 2u);
  EXPECT_EQ(s.config().source(), roced::v1::CONFIG_SOURCE_GRPC);
  EXPECT_EQ(s.config().desired().interfaces(0).mtu(), 9000u);

  // An operator edits the file: it wins at the next start.
  write("interfaces:\n  - match: {netdev: eth0}\n    mtu: 3000\n");
  agent_.reset();
  Start(file);
  s = agent_->State();
  EXPECT_EQ(s.config().generation(), 3u);
  EXPECT_EQ(s.config().source(), roced::v1::CONFIG_SOURCE_FILE);
  EXPECT_EQ(s.config().desired().interfaces(0).mtu(), 3000u);
}

TEST_F(AgentReconcileTest, PartialHugepagesAreNotRetriedInATightLoop) {
  io_.hugepages[(reconcile::HugepagePool{2048, -1})] = 0;
  io_.hugepage_limit[(reconcile::HugepagePool{2048, -1})] = 10;
  auto r = Apply("hugepages: [{size: 2Mi, count: 64}]\n");
  ASSERT_TRUE(r.ok());
  int writes = io_.writes;
  agent_->Reconcile("test");
  agent_->Reconcile("test");
  EXPECT_EQ(io_.writes, writes);  // backoff: no new write attempts
  EXPECT_EQ(io_.hugepages[(reconcile::HugepagePool{2048, -1})], std::optional<uint64_t>(10));
  // Waiting out the back-off is not "converged": the pool is still short,
  // and the field keeps saying by how much (seen in the lab: it read
  // converged with the field merely DRIFTED).
  auto s = agent_->State();
  EXPECT_FALSE(s.config().converged());
  ASSERT_EQ(s.fields_size(), 1);
  EXPECT_EQ(s.fields(0).sync(), roced::v1::FIELD_SYNC_FAILED);
  EXPECT_THAT(s.fields(0).message(), ::testing::HasSubstr("wanted 64 pages, the kernel reserved 10"));
}

// Reconcile passes run so far (all results), from the agent's registry.
double ReconcileRuns(Agent* agent) {
  double sum = 0;
  for (const auto& family : agent->registry()->Collect()) {
    if (family.name != "roced_reconcile_runs_total") continue;
    for (const auto& m : family.metric) sum += m.counter.value;
  }
  return sum;
}

// The backstop: passes run every reconcile.interval with nothing to
// trigger them (this agent has no netlink monitor), and drift no event
// announces is corrected by them alone.
TEST_F(AgentReconcileTest, PeriodicPassCorrectsDriftNoEventAnnounced) {
  agent_.reset();
  Start("", /*loop=*/true);
  ASSERT_TRUE(Apply(kPfc3).ok());
  // The default interval is the 30 s the README states: a pass at 30 s
  // after the one the config change wakes, and none before.
  EXPECT_EQ(agent_->State().config().desired().reconcile().interval().seconds(), 30);
  ASSERT_TRUE(agent_->AwaitIdle());  // the pass the config change wakes
  double runs = ReconcileRuns(agent_.get());
  Step(absl::Seconds(29));
  EXPECT_EQ(ReconcileRuns(agent_.get()), runs) << "a pass before the 30 s interval";
  Step(absl::Seconds(1));
  EXPECT_EQ(ReconcileRuns(agent_.get()), runs + 1);

  ASSERT_TRUE(Apply(std::string("reconcile: {interval: 1s}\n") + kPfc3).ok());
  ASSERT_TRUE(agent_->AwaitIdle());
  runs = ReconcileRuns(agent_.get());
  const int writes = io_.Writes();
  io_.Update("eth0", [](reconcile::InterfaceObserved& i) { i.pfc->enabled = 0; });
  Step(absl::Milliseconds(900));
  EXPECT_EQ(io_.Interface("eth0").pfc->enabled, 0u) << "corrected before the 1 s pass";
  Step(absl::Milliseconds(100));
  EXPECT_EQ(io_.Interface("eth0").pfc->enabled, 1u << 3);
  EXPECT_GT(io_.Writes(), writes);
  Step(absl::Seconds(1));
  Step(absl::Seconds(1));
  EXPECT_EQ(ReconcileRuns(agent_.get()) - runs, 3) << "a pass every second expected";
}

// A partly satisfied hugepage request is tried again once its back-off has
// passed (5 minutes by default; shortened here), and then reaches the count
// when the memory has become available.
TEST_F(AgentReconcileTest, PartialHugepagesAreRetriedAfterTheBackOff) {
  EXPECT_EQ(AgentOptions().resource_backoff, absl::Minutes(5));
  agent_.reset();
  Start("", /*loop=*/false, false, absl::Milliseconds(300));
  const reconcile::HugepagePool pool{2048, -1};
  io_.hugepages[pool] = 0;
  io_.hugepage_limit[pool] = 10;
  ASSERT_TRUE(Apply("hugepages: [{size: 2Mi, count: 64}]\n").ok());
  EXPECT_EQ(io_.hugepages[pool], std::optional<uint64_t>(10));
  const int writes = io_.writes;
  agent_->Reconcile("test");
  EXPECT_EQ(io_.writes, writes);  // within the back-off: no write
  io_.hugepage_limit[pool] = 64;  // memory freed meanwhile
  clock_.Advance(absl::Milliseconds(200));
  agent_->Reconcile("test");
  EXPECT_EQ(io_.writes, writes) << "tried again 100 ms before the back-off ends";
  clock_.Advance(absl::Milliseconds(200));
  agent_->Reconcile("test");
  EXPECT_GT(io_.writes, writes);
  EXPECT_EQ(io_.hugepages[pool], std::optional<uint64_t>(64));
  EXPECT_TRUE(agent_->State().config().converged());
}

// A provisional config whose confirm deadline passes while the agent is
// down is rolled back when it starts again, with a config file (the file's
// config returns) and without one (the persisted previous config returns);
// either way the fields the provisional apply changed are put back.
TEST_F(AgentReconcileTest, ProvisionalConfigThatExpiredWhileDownIsRolledBackAtStart) {
  const std::string file = WriteConfigFile("interfaces:\n  - match: {netdev: eth0}\n    mtu: 2000\n");
  agent_.reset();
  Start(file, /*loop=*/true);
  ASSERT_TRUE(StepUntil([&] { return io_.Interface("eth0").mtu == std::optional<uint32_t>(2000); }, absl::Seconds(1)));
  const reconcile::InterfaceObserved before = io_.Interface("eth0");
  roced::v1::ApplyConfigRequest req;
  *req.mutable_config() = Config(kPfc3);
  req.mutable_confirm_timeout()->set_seconds(1);
  ASSERT_TRUE(agent_->ApplyConfig(req).ok());
  EXPECT_EQ(io_.Interface("eth0").pfc, (reconcile::Pfc{0x08, 0}));
  agent_.reset();  // down before the deadline
  clock_.Advance(absl::Milliseconds(1200));
  Start(file, /*loop=*/true);
  ASSERT_TRUE(StepUntil([&] {
    return io_.Interface("eth0").pfc == before.pfc && !std::filesystem::exists(dir_ + "/apply-journal.json");
  }, absl::Seconds(1)));
  auto s = agent_->State();
  EXPECT_FALSE(s.config().has_confirm_deadline());
  EXPECT_EQ(s.config().desired().interfaces(0).mtu(), 2000u);
  EXPECT_FALSE(s.config().desired().interfaces(0).has_qos());
  EXPECT_EQ(io_.Interface("eth0").mtu, before.mtu);
  EXPECT_EQ(io_.Interface("eth0").pfc, before.pfc);
  EXPECT_EQ(io_.Interface("eth0").dscp, before.dscp);
}

// The file edited while the agent was down with a provisional config past
// its deadline: the file wins, the priors are restored, and the generation
// moves on (never back to 1, which would reuse a controller's numbers).
TEST_F(AgentReconcileTest, ExpiredProvisionalAndAnEditedFileKeepTheGenerationGoingForward) {
  auto write = [&](const std::string& body) { return WriteConfigFile(body); };
  const std::string file = dir_ + "/roced.yaml";
  write("interfaces:\n  - match: {netdev: eth0}\n    mtu: 2000\n");
  agent_.reset();
  Start(file, /*loop=*/true);
  ASSERT_TRUE(Apply("interfaces:\n  - match: {netdev: eth0}\n    mtu: 2000\n").ok());
  roced::v1::ApplyConfigRequest req;
  *req.mutable_config() = Config(kPfc3);
  req.mutable_confirm_timeout()->set_seconds(1);
  auto r = agent_->ApplyConfig(req);
  ASSERT_TRUE(r.ok()) << r.status();
  const uint64_t provisional = r->generation();
  ASSERT_GE(provisional, 2u);
  agent_.reset();
  write("interfaces:\n  - match: {netdev: eth0}\n    mtu: 3000\n");
  clock_.Advance(absl::Milliseconds(1200));
  Start(file, /*loop=*/true);
  ASSERT_TRUE(StepUntil([&] {
    return io_.Interface("eth0").mtu == std::optional<uint32_t>(3000) && io_.Interface("eth0").pfc == reconcile::Pfc{};
  }, absl::Seconds(1)));
  auto s = agent_->State();
  EXPECT_GT(s.config().generation(), provisional);
  EXPECT_EQ(s.config().source(), roced::v1::CONFIG_SOURCE_FILE);
  EXPECT_EQ(io_.Interface("eth0").mtu, std::optional<uint32_t>(3000));
  EXPECT_EQ(io_.Interface("eth0").pfc, reconcile::Pfc{});  // the provisional PFC is gone
}

TEST_F(AgentReconcileTest, ProvisionalConfigThatExpiredWhileDownWithoutAFileIsRolledBack) {
  const std::string file = dir_ + "/absent.yaml";
  agent_.reset();
  Start(file, /*loop=*/true, /*config_optional=*/true);
  ASSERT_TRUE(Apply("interfaces:\n  - match: {netdev: eth0}\n    mtu: 2000\n").ok());
  const reconcile::InterfaceObserved before = io_.Interface("eth0");
  roced::v1::ApplyConfigRequest req;
  *req.mutable_config() = Config(kPfc3);
  req.mutable_confirm_timeout()->set_seconds(1);
  ASSERT_TRUE(agent_->ApplyConfig(req).ok());
  EXPECT_EQ(io_.Interface("eth0").mtu, std::optional<uint32_t>(4200));
  agent_.reset();
  clock_.Advance(absl::Milliseconds(1200));
  Start(file, /*loop=*/true, /*config_optional=*/true);
  ASSERT_TRUE(StepUntil([&] {
    return io_.Interface("eth0").pfc == before.pfc && io_.Interface("eth0").mtu == before.mtu &&
           !agent_->State().config().has_confirm_deadline();
  }, absl::Seconds(1)));
  auto s = agent_->State();
  EXPECT_FALSE(s.config().has_confirm_deadline());
  EXPECT_EQ(s.config().source(), roced::v1::CONFIG_SOURCE_CONFIRM_TIMEOUT);
  EXPECT_EQ(s.config().desired().interfaces(0).mtu(), 2000u);
  EXPECT_EQ(io_.Interface("eth0").mtu, before.mtu);
  EXPECT_EQ(io_.Interface("eth0").pfc, before.pfc);
}

}  // namespace
}  // namespace roced::agent

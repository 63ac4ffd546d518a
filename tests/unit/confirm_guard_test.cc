// The confirm guard over a real Agent (FakeNodeIoForTest for the node, the
// fixture sysfs tree for devices) with the window's clock moved by the
// test: a config whose gates hold is confirmed by the agent itself at the
// window's end and not before; a failed gate returns the node to what it
// was, says why (state, event, metric) and keeps saying it across configs
// and restarts; the policy and its baseline survive a restart; policies the
// agent cannot judge are refused before anything changes.
#include "agent/runtimes/confirm_guard.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "agent/core/agent.h"
#include "fake_node_io_for_test.h"
#include "model/config_yaml.h"
#include "prometheus/text_serializer.h"
#include "test_util.h"
#include "util/clock.h"
#include "util/proto_time.h"

namespace roced::agent {
namespace {

using reconcile::FakeNodeIoForTest;
using ::testing::HasSubstr;

roced::v1::NodeConfig Mtu(uint32_t mtu) {
  std::vector<roced::v1::ValidationIssue> issues;
  auto d = model::DecodeYamlConfig(absl::StrCat("apiVersion: roced/v1\nkind: NodeConfig\n"
                                                "interfaces:\n  - match: {netdev: eth0}\n    mtu: ",
                                                mtu, "\n"),
                                   &issues);
  EXPECT_TRUE(d.ok()) << model::FormatIssues("cfg", issues);
  return d->config;
}

class ConfirmGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = roced::test_util::MakeTempDir("roced-guard");
    reconcile::InterfaceObserved eth0;
    eth0.mtu = 1500;
    io_.interfaces["eth0"] = eth0;
    Start();
  }
  void TearDown() override {
    guard_.reset();
    agent_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Start() {
    AgentOptions o;
    o.paths.sysfs = std::string(ROCED_FIXTURES) + "/sysfs";
    o.state_dir = dir_;
    o.config_path = dir_ + "/missing.yaml";
    o.config_optional = true;
    o.use_netlink = false;
    o.backends.node_io = &io_;
    o.reconcile = false;
    o.registry = registry_ = std::make_shared<prometheus::Registry>();
    o.clock = &clock_;
    agent_ = std::make_unique<Agent>(o);
    ASSERT_TRUE(agent_->LoadConfig(true).ok());
    agent_->Start();
    ConfirmGuardOptions g;
    g.clock = &clock_;
    guard_ = std::make_unique<ConfirmGuard>(agent_.get(), ConfirmSources{}, g);
  }
  // Applies MTU `mtu` with `policy` (a spec), its baseline taken by the guard.
  absl::StatusOr<roced::v1::ApplyConfigResponse> Apply(uint32_t mtu, const std::string& policy) {
    roced::v1::ApplyConfigRequest req;
    *req.mutable_config() = Mtu(mtu);
    if (!policy.empty()) {
      absl::StatusOr<roced::v1::ConfirmPolicy> p = model::ParseConfirmPolicy(policy);
      if (!p.ok()) return p.status();
      *req.mutable_confirm_policy() = *p;
      absl::StatusOr<roced::v1::ConfirmBaseline> b = guard_->TakeBaseline(*p);
      if (!b.ok()) return b.status();
      return agent_->ApplyConfig(req, "controller", *b);
    }
    return agent_->ApplyConfig(req, "controller");
  }
  double Rollbacks(const std::string& reason) {
    const std::string text = prometheus::TextSerializer().Serialize(registry_->Collect());
    const std::string series = absl::StrCat("roced_config_rollbacks_total{reason=\"", reason, "\"} ");
    size_t at = text.find(series);
    if (at == std::string::npos) return -1;
    return std::stod(text.substr(at + series.size()));
  }

  std::string dir_;
  FakeNodeIoForTest io_;
  std::shared_ptr<prometheus::Registry> registry_;
  util::SimulatedClock clock_{absl::Now()};  // the agent's and the guard's; outlives both
  std::unique_ptr<Agent> agent_;
  std::unique_ptr<ConfirmGuard> guard_;
};

TEST_F(ConfirmGuardTest, GatesThatHoldAreConfirmedByTheAgentAtTheWindowsEnd) {
  ASSERT_TRUE(Apply(2000, "").ok());
  auto sub = agent_->Subscribe();
  auto r = Apply(9000, "window=30s,converged,no-pfc-storm");
  ASSERT_TRUE(r.ok()) << r.status();
  const uint64_t g = r->generation();
  // The deadline is the window and the grace: the backstop.
  const absl::Duration until = util::FromProto(r->confirm_deadline()) - clock_.Now();
  EXPECT_LE(until, absl::Seconds(30) + model::defaults::kConfirmPolicyGrace);
  EXPECT_GT(until, absl::Seconds(29) + model::defaults::kConfirmPolicyGrace);
  EXPECT_TRUE(guard_->CheckOnce());
  roced::v1::NodeState mid = agent_->State();
  EXPECT_TRUE(mid.config().has_confirm_deadline()) << "confirmed before the window ended";
  ASSERT_EQ(mid.config().gates_size(), 2);
  EXPECT_EQ(mid.config().gates(0).gate(), "converged");
  EXPECT_EQ(mid.config().gates(0).state(), roced::v1::GATE_STATE_HOLDING);
  EXPECT_EQ(mid.config().gates(1).gate(), "pfc_storm");
  EXPECT_EQ(mid.config().confirm_policy().window().seconds(), 30);
  clock_.Advance(absl::Seconds(31));
  EXPECT_TRUE(guard_->CheckOnce());
  roced::v1::NodeState after = agent_->State();
  EXPECT_EQ(after.config().generation(), g);
  EXPECT_FALSE(after.config().has_confirm_deadline());
  EXPECT_FALSE(after.config().has_confirm_policy());
  EXPECT_EQ(after.config().gates_size(), 0);
  EXPECT_EQ(io_.Interface("eth0").mtu, std::optional<uint32_t>(9000));
  EXPECT_FALSE(guard_->CheckOnce()) << "nothing is pending any more";
  // The confirmation is an event, saying who.
  bool confirmed = false;
  roced::v1::StateEvent ev;
  while (sub->Next(&ev, absl::ZeroDuration())) {
    if (ev.has_config() && ev.config().confirmed()) {
      confirmed = true;
      EXPECT_EQ(ev.config().generation(), g);
      EXPECT_EQ(ev.config().identity(), kConfirmGuardIdentity);
    }
  }
  EXPECT_TRUE(confirmed);
}

TEST_F(ConfirmGuardTest, AFailedGateReturnsTheNodeAndSaysWhy) {
  ASSERT_TRUE(Apply(2000, "").ok());
  auto sub = agent_->Subscribe();
  // No probe runtime here: the probe gate fails at its first run.
  auto r = Apply(9000, "window=60s,converged,probe=node2");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(io_.Interface("eth0").mtu, std::optional<uint32_t>(9000));
  EXPECT_EQ(Rollbacks("probe"), 0);
  EXPECT_TRUE(guard_->CheckOnce());
  roced::v1::NodeState s = agent_->State();
  EXPECT_EQ(s.config().generation(), r->generation() + 1);
  EXPECT_EQ(s.config().source(), roced::v1::CONFIG_SOURCE_CONFIRM_GATE);
  EXPECT_FALSE(s.config().has_confirm_deadline());
  EXPECT_EQ(s.config().desired().interfaces(0).mtu(), 2000u);
  EXPECT_EQ(io_.Interface("eth0").mtu, std::optional<uint32_t>(2000));
  const roced::v1::ConfigRollback& rb = s.config().last_rollback();
  EXPECT_EQ(rb.generation(), r->generation());
  EXPECT_EQ(rb.returned_to(), r->generation() + 1);
  EXPECT_EQ(rb.reason(), "probe");
  EXPECT_THAT(rb.detail(), HasSubstr("probe node2: this agent does not run probes"));
  EXPECT_EQ(Rollbacks("probe"), 1);
  EXPECT_EQ(Rollbacks("confirm_timeout"), 0);
  bool told = false;
  roced::v1::StateEvent ev;
  while (sub->Next(&ev, absl::ZeroDuration())) {
    if (ev.has_config() && ev.config().has_rollback()) {
      told = true;
      EXPECT_EQ(ev.config().source(), roced::v1::CONFIG_SOURCE_CONFIRM_GATE);
      EXPECT_EQ(ev.config().rollback().reason(), "probe");
    }
  }
  EXPECT_TRUE(told);
  // The rollback stays on record across a later config and a restart.
  ASSERT_TRUE(Apply(4000, "").ok());
  guard_.reset();
  agent_.reset();
  Start();
  EXPECT_EQ(agent_->State().config().last_rollback().generation(), r->generation());
  EXPECT_EQ(agent_->State().config().last_rollback().reason(), "probe");
}

TEST_F(ConfirmGuardTest, ThePolicyAndItsBaselineSurviveARestart) {
  ASSERT_TRUE(Apply(2000, "").ok());
  auto r = Apply(9000, "window=60s,converged");
  ASSERT_TRUE(r.ok()) << r.status();
  const roced::v1::ConfirmBaseline before = agent_->State().config().baseline();
  EXPECT_TRUE(before.has_taken_at());
  guard_.reset();
  agent_.reset();
  Start();
  roced::v1::NodeState s = agent_->State();
  EXPECT_EQ(s.config().generation(), r->generation());
  EXPECT_TRUE(s.config().has_confirm_deadline());
  EXPECT_EQ(s.config().confirm_policy().window().seconds(), 60);
  EXPECT_EQ(s.config().baseline().SerializeAsString(), before.SerializeAsString());
  // The window runs from the apply, not from the restart.
  clock_.Advance(absl::Seconds(61));
  EXPECT_TRUE(guard_->CheckOnce());
  EXPECT_FALSE(agent_->State().config().has_confirm_deadline());
  EXPECT_EQ(agent_->State().config().generation(), r->generation());
}

TEST_F(ConfirmGuardTest, PoliciesTheAgentCannotJudgeAreRefusedAndChangeNothing) {
  ASSERT_TRUE(Apply(2000, "").ok());
  const uint64_t g = agent_->State().config().generation();
  // No mesh on this agent.
  auto mesh = Apply(9000, "window=60s,mesh-loss=0.01");
  EXPECT_EQ(mesh.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(mesh.status().message(), HasSubstr("confirm_policy.max_mesh_loss_increase: the mesh is not running"));
  // Both ways of confirming at once.
  roced::v1::ApplyConfigRequest both;
  *both.mutable_config() = Mtu(9000);
  *both.mutable_confirm_policy() = *model::ParseConfirmPolicy("window=60s,converged");
  both.mutable_confirm_timeout()->set_seconds(60);
  EXPECT_THAT(agent_->ApplyConfig(both).status().message(), HasSubstr("confirm_timeout and confirm_policy"));
  // Out of range, checked by the agent too.
  roced::v1::ApplyConfigRequest bad;
  *bad.mutable_config() = Mtu(9000);
  bad.mutable_confirm_policy()->set_converged(true);
  bad.mutable_confirm_policy()->mutable_window()->set_seconds(3);
  auto refused = agent_->ApplyConfig(bad);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("confirm_policy.window: 3s is out of range; allowed 10s to 1h"));
  EXPECT_EQ(agent_->State().config().generation(), g);
  EXPECT_EQ(io_.Interface("eth0").mtu, std::optional<uint32_t>(2000));
}

}  // namespace
}  // namespace roced::agent

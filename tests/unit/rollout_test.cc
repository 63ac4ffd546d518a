// rocectl rollout's pure parts (tools/rocectl/rollout.h): the batch plan and
// its flags' errors, the targets file, the outcome of a generation read
// from a ConfigStatus, the resume decisions for a node caught mid-step, and
// the state file's round trip.
#include "tools/rocectl/rollout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "google/protobuf/util/message_differencer.h"
#include "model/confirm_policy.h"
#include "util/fs.h"

namespace roced::ctl {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<uint32_t> Plan(size_t targets, uint64_t canary, const std::string& max_unavailable) {
  auto max = ParseMaxUnavailable(max_unavailable, targets);
  EXPECT_TRUE(max.ok()) << max.status();
  auto plan = PlanBatches(targets, canary, max.ok() ? *max : 1);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : std::vector<uint32_t>{};
}

TEST(RolloutPlan, CanaryThenDoublingUpToMaxUnavailable) {
  EXPECT_THAT(Plan(7, 1, "2"), ElementsAre(1, 2, 2, 2));
  EXPECT_THAT(Plan(20, 1, "8"), ElementsAre(1, 2, 4, 8, 5));
  EXPECT_THAT(Plan(10, 2, "4"), ElementsAre(2, 4, 4));
  // The defaults: one node at a time.
  EXPECT_THAT(Plan(3, 1, "1"), ElementsAre(1, 1, 1));
}

TEST(RolloutPlan, PercentOfTheTargetsRoundedDownAtLeastOne) {
  EXPECT_EQ(*ParseMaxUnavailable("25%", 10), 2u);  // 2.5
  EXPECT_THAT(Plan(10, 1, "25%"), ElementsAre(1, 2, 2, 2, 2, 1));
  EXPECT_EQ(*ParseMaxUnavailable("1%", 10), 1u);  // 0.1, at least one
  EXPECT_EQ(*ParseMaxUnavailable("100%", 7), 7u);
  EXPECT_EQ(*ParseMaxUnavailable("33%", 1000), 330u);
}

TEST(RolloutPlan, EdgeCases) {
  EXPECT_THAT(Plan(1, 1, "1"), ElementsAre(1));
  // The canary may be the whole fleet when that many may change at once.
  EXPECT_THAT(Plan(4, 4, "100%"), ElementsAre(4));
  // More allowed unavailable than there are nodes left: the rest at once.
  EXPECT_THAT(Plan(5, 1, "50"), ElementsAre(1, 2, 2));
}

TEST(RolloutPlan, BadValuesNameTheFlagAndTheAllowedRange) {
  for (const char* bad : {"0", "-1", "x", "", "0%", "101%", "1.5", "%", "5%%"}) {
    SCOPED_TRACE(bad);
    auto s = ParseMaxUnavailable(bad, 10);
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(s.status().message(), HasSubstr("--max-unavailable"));
    EXPECT_THAT(s.status().message(), HasSubstr("1% to 100%"));
  }
  auto zero = PlanBatches(5, 0, 2);
  ASSERT_FALSE(zero.ok());
  EXPECT_THAT(zero.status().message(), HasSubstr("--canary: 0 is not in 1-5"));
  auto over = PlanBatches(5, 6, 10);
  ASSERT_FALSE(over.ok());
  EXPECT_THAT(over.status().message(), HasSubstr("--canary: 6 is not in 1-5"));
  auto wider = PlanBatches(5, 3, 2);
  ASSERT_FALSE(wider.ok());
  EXPECT_THAT(wider.status().message(), HasSubstr("--canary: 3 is larger than --max-unavailable (2"));
  EXPECT_FALSE(PlanBatches(0, 1, 1).ok());
  auto on_failure = ParseOnFailure("retry");
  ASSERT_FALSE(on_failure.ok());
  EXPECT_THAT(on_failure.status().message(), HasSubstr("--on-failure: 'retry' is not one of pause, rollback"));
  EXPECT_EQ(*ParseOnFailure("rollback"), roced::v1::ROLLOUT_ON_FAILURE_ROLLBACK);
}

TEST(RolloutTargets, AddressesOrTheMeshInventory) {
  auto plain = ParseTargets("# fleet\n10.0.0.1:7471\n\n  [fd00::2]:7471  # v6\n");
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_EQ(plain->size(), 2u);
  EXPECT_EQ((*plain)[1].address, "[fd00::2]:7471");
  EXPECT_EQ((*plain)[1].name, "[fd00::2]:7471");
  auto inventory = ParseTargets("node1 10.0.0.1:7471 tor-a\nnode2 10.0.0.2:7471\n");
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  EXPECT_EQ((*inventory)[1].name, "node2");
  EXPECT_EQ((*inventory)[1].address, "10.0.0.2:7471");
  auto bad = ParseTargets("10.0.0.1:7471\nnode2\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("line 2: 'node2' is not host:port"));
  auto twice = ParseTargets("10.0.0.1:7471\n10.0.0.1:7471\n");
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("listed twice"));
}

roced::v1::ConfigStatus Config(uint64_t generation, bool provisional) {
  roced::v1::ConfigStatus c;
  c.set_generation(generation);
  if (provisional) c.mutable_confirm_deadline()->set_seconds(1);
  return c;
}

TEST(RolloutOutcome, ClassifiesAGenerationFromTheConfigStatus) {
  EXPECT_EQ(ClassifyOutcome(Config(5, true), 5).outcome, Outcome::kWaiting);
  EXPECT_EQ(ClassifyOutcome(Config(5, false), 5).outcome, Outcome::kConfirmed);
  // Rolled back: the agent accepted the previous config as 6.
  roced::v1::ConfigStatus back = Config(6, false);
  back.mutable_last_rollback()->set_generation(5);
  back.mutable_last_rollback()->set_returned_to(6);
  back.mutable_last_rollback()->set_reason("probe");
  back.mutable_last_rollback()->set_detail("probe 127.0.0.1:9: connection refused");
  const Classified c = ClassifyOutcome(back, 5);
  EXPECT_EQ(c.outcome, Outcome::kRolledBack);
  EXPECT_EQ(c.reason, "probe");
  EXPECT_EQ(c.detail, "probe 127.0.0.1:9: connection refused (returned to generation 6)");
  // An older rollback does not count for this generation.
  back.mutable_last_rollback()->set_generation(3);
  EXPECT_EQ(ClassifyOutcome(back, 5).outcome, Outcome::kSuperseded);
  EXPECT_THAT(ClassifyOutcome(back, 5).detail, HasSubstr("replaced by 6"));
  EXPECT_EQ(ClassifyOutcome(Config(4, false), 5).outcome, Outcome::kBehind);
}

TEST(RolloutOutcome, GateSummary) {
  roced::v1::ConfigStatus c;
  auto* g = c.add_gates();
  g->set_gate("converged");
  g->set_state(roced::v1::GATE_STATE_HOLDING);
  g = c.add_gates();
  g->set_gate("probe node3");
  g->set_state(roced::v1::GATE_STATE_WAITING);
  EXPECT_EQ(GateSummary(c.gates()), "converged holding, probe node3 waiting");
}

roced::v1::NodeConfig ConfigWithMode(roced::v1::Mode mode) {
  roced::v1::NodeConfig c;
  c.set_api_version("roced/v1");
  c.set_kind("NodeConfig");
  c.set_mode(mode);
  return c;
}

TEST(RolloutResume, ApplyingNodeIsSentAgainAdoptedOrLeft) {
  roced::v1::RolloutNode node;
  node.set_state(roced::v1::ROLLOUT_NODE_STATE_APPLYING);
  node.set_previous_generation(7);
  const roced::v1::NodeConfig ours = ConfigWithMode(roced::v1::MODE_ENFORCE);
  // Unchanged: the call never landed.
  roced::v1::ConfigStatus now = Config(7, false);
  *now.mutable_desired() = ConfigWithMode(roced::v1::MODE_OBSERVE);
  EXPECT_EQ(DecideApplying(node, ours, now).what, Resumed::kSendAgain);
  // Landed as 8 with our config, provisional.
  now = Config(8, true);
  *now.mutable_desired() = ours;
  ResumeDecision d = DecideApplying(node, ours, now);
  EXPECT_EQ(d.what, Resumed::kLanded);
  EXPECT_EQ(d.generation, 8u);
  // Landed as 8 and already rolled back by the agent (now 9).
  now = Config(9, false);
  *now.mutable_desired() = ConfigWithMode(roced::v1::MODE_OBSERVE);
  now.mutable_last_rollback()->set_generation(8);
  d = DecideApplying(node, ours, now);
  EXPECT_EQ(d.what, Resumed::kLanded);
  EXPECT_EQ(d.generation, 8u);
  EXPECT_EQ(ClassifyOutcome(now, d.generation).outcome, Outcome::kRolledBack);
  // Someone else's 8.
  now = Config(8, false);
  *now.mutable_desired() = ConfigWithMode(roced::v1::MODE_OBSERVE);
  d = DecideApplying(node, ours, now);
  EXPECT_EQ(d.what, Resumed::kChangedElsewhere);
  EXPECT_THAT(d.detail, HasSubstr("moved from generation 7 to 8 with a desired config that is not the one sent"));
}

TEST(RolloutResume, RevertingNodeIsSentAgainOrFoundReturned) {
  roced::v1::RolloutNode node;
  node.set_state(roced::v1::ROLLOUT_NODE_STATE_REVERTING);
  node.set_previous_generation(2);
  node.set_generation(3);
  node.set_revert_from(3);
  *node.mutable_previous_config() = ConfigWithMode(roced::v1::MODE_OBSERVE);
  roced::v1::ConfigStatus now = Config(3, false);
  *now.mutable_desired() = ConfigWithMode(roced::v1::MODE_ENFORCE);
  EXPECT_EQ(DecideReverting(node, now).what, Resumed::kSendAgain);
  now = Config(4, false);
  *now.mutable_desired() = node.previous_config();
  const ResumeDecision d = DecideReverting(node, now);
  EXPECT_EQ(d.what, Resumed::kLanded);
  EXPECT_EQ(d.generation, 4u);
  now = Config(5, false);
  EXPECT_EQ(DecideReverting(node, now).what, Resumed::kChangedElsewhere);
}

TEST(RolloutResume, HaltedRolloutRetriesItsFailedNodes) {
  roced::v1::RolloutState state = NewRolloutState({{"a", "a:1"}, {"b", "b:1"}, {"c", "c:1"}}, {1, 2});
  EXPECT_EQ(state.nodes(2).batch(), 1u);
  state.mutable_nodes(0)->set_state(roced::v1::ROLLOUT_NODE_STATE_CONFIRMED);
  auto* b = state.mutable_nodes(1);
  b->set_state(roced::v1::ROLLOUT_NODE_STATE_ROLLED_BACK);
  b->set_generation(9);
  b->set_reason("probe");
  state.set_phase(roced::v1::ROLLOUT_PHASE_HALTED);
  state.set_halted_by("b");
  EXPECT_TRUE(Unfinished(state));
  EXPECT_EQ(ResetFailedForRetry(&state), 1);
  EXPECT_EQ(state.phase(), roced::v1::ROLLOUT_PHASE_RUNNING);
  EXPECT_EQ(state.nodes(1).state(), roced::v1::ROLLOUT_NODE_STATE_PENDING);
  EXPECT_EQ(state.nodes(1).generation(), 0u);
  EXPECT_EQ(state.nodes(1).address(), "b:1");
  EXPECT_EQ(state.nodes(0).state(), roced::v1::ROLLOUT_NODE_STATE_CONFIRMED);
  EXPECT_TRUE(state.halted_by().empty());
  state.set_phase(roced::v1::ROLLOUT_PHASE_DONE);
  EXPECT_FALSE(Unfinished(state));
  state.set_phase(roced::v1::ROLLOUT_PHASE_REVERTED);
  EXPECT_FALSE(Unfinished(state));
}

TEST(RolloutStateFile, RoundTripsAndNamesWhatIsWrong) {
  const std::string dir = ::testing::TempDir() + "/rollout_state_test/sub";
  std::filesystem::remove_all(dir);
  const std::string path = dir + "/rollout.json";
  EXPECT_TRUE(absl::IsNotFound(LoadRolloutState(path).status()));
  roced::v1::RolloutState state = NewRolloutState({{"n1", "127.0.0.1:1"}, {"n2", "127.0.0.1:2"}}, {1, 1});
  state.set_config_path("good.yaml");
  *state.mutable_config() = ConfigWithMode(roced::v1::MODE_ENFORCE);
  *state.mutable_confirm_policy() = *model::ParseConfirmPolicy(kDefaultRolloutPolicy);
  state.set_on_failure(roced::v1::ROLLOUT_ON_FAILURE_ROLLBACK);
  auto* n = state.mutable_nodes(0);
  n->set_state(roced::v1::ROLLOUT_NODE_STATE_WAITING);
  n->set_previous_generation(18446744073709551615ull);  // uint64 survives JSON
  n->set_generation(12);
  n->add_gates()->set_gate("converged");
  ASSERT_TRUE(SaveRolloutState(path, state).ok());  // creates the directory
  auto loaded = LoadRolloutState(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*loaded, state));
  // No temp file left beside it.
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
  ASSERT_TRUE(util::WriteFileAtomic(path, "{\"nodes\": 3}").ok());
  auto bad = LoadRolloutState(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("not a rollout state file"));
  std::filesystem::remove_all(dir);
}

TEST(RolloutStateFile, TableShowsEachNode) {
  roced::v1::RolloutState state = NewRolloutState({{"node1", "10.0.0.1:7471"}, {"node2", "10.0.0.2:7471"}}, {1, 1});
  state.set_config_path("lossless.yaml");
  *state.mutable_confirm_policy() = *model::ParseConfirmPolicy("window=10s,converged");
  auto* n = state.mutable_nodes(0);
  n->set_state(roced::v1::ROLLOUT_NODE_STATE_ROLLED_BACK);
  n->mutable_applied_at()->set_seconds(1);
  n->set_previous_generation(3);
  n->set_generation(4);
  n->set_reason("probe");
  n->set_detail("unreachable");
  state.set_phase(roced::v1::ROLLOUT_PHASE_HALTED);
  const std::string table = RolloutTable(state);
  EXPECT_THAT(table, HasSubstr("Rollout of lossless.yaml: halted (2 node(s) in 2 batch(es): 1 pending, 1 rolled_back)"));
  EXPECT_THAT(table, HasSubstr("node1  0      rolled_back  3 -> 4          probe: unreachable\n"));
  EXPECT_THAT(table, HasSubstr("node2  1      pending      -\n"));
  EXPECT_EQ(NodeStateName(roced::v1::ROLLOUT_NODE_STATE_ROLLED_BACK), "rolled_back");
  EXPECT_EQ(PhaseName(roced::v1::ROLLOUT_PHASE_REVERTED), "reverted");
}

}  // namespace
}  // namespace roced::ctl

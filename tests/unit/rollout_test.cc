// A rollout's pure parts (lib/rollout/rollout.h, state_file.h) and rocectl's
// table of it (tools/rocectl/rollout_table.h): the batch plan and
// its flags' errors, the targets file, the outcome of a generation read
// from a ConfigStatus, the resume decisions for a node caught mid-step, and
// the state file: its snapshot and journal, what a kill at any point leaves
// and what a whole rollout writes.
#include "rollout/rollout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "model/confirm_policy.h"
#include "rollout/state_file.h"
#include "tools/rocectl/rollout_table.h"
#include "util/fs.h"

namespace roced::rollout {
namespace {

using ctl::RolloutTable;

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

// A state of `n` targets "a0:1", "a1:1", ... in the plan's batches.
roced::v1::RolloutState StateOf(size_t n, uint64_t canary, const std::string& max_unavailable) {
  std::vector<RolloutTarget> targets;
  for (size_t i = 0; i < n; ++i) targets.push_back({absl::StrCat("n", i), absl::StrCat("a", i, ":1")});
  return NewRolloutState(targets, Plan(n, canary, max_unavailable));
}
std::vector<std::string> PeersOf(const roced::v1::RolloutState& s, int i) {
  return {s.nodes(i).probe_peers().begin(), s.nodes(i).probe_peers().end()};
}

// Three nodes, canary 1 then 2: the canary probes the two not yet changed;
// the second batch each probes the canary (on the new config) and the
// other node of its batch.
TEST(RolloutProbePeers, OneOnTheNewConfigAndOneNotWhereTheBatchesAllow) {
  roced::v1::RolloutState s = StateOf(3, 1, "2");
  AssignProbePeers(&s);
  EXPECT_THAT(PeersOf(s, 0), ElementsAre("a1:1", "a2:1"));
  EXPECT_THAT(PeersOf(s, 1), ElementsAre("a0:1", "a2:1"));
  EXPECT_THAT(PeersOf(s, 2), ElementsAre("a0:1", "a1:1"));
  // Ten nodes, canary 1, batches 1, 2, 4, 2: every node of a middle batch
  // probes one node of an earlier batch and one of a later one.
  s = StateOf(10, 1, "4");
  AssignProbePeers(&s);
  for (int i = 0; i < s.nodes_size(); ++i) {
    const auto& node = s.nodes(i);
    ASSERT_EQ(node.probe_peers_size(), 2) << i;
    std::set<std::string> peers(node.probe_peers().begin(), node.probe_peers().end());
    EXPECT_EQ(peers.size(), 2u) << i;
    EXPECT_FALSE(peers.count(node.address())) << i << " probes itself";
    auto batch_of = [&](const std::string& address) {
      for (const auto& m : s.nodes()) {
        if (m.address() == address) return m.batch();
      }
      return 999u;
    };
    const uint32_t last = static_cast<uint32_t>(s.batch_sizes_size() - 1);
    if (node.batch() > 0) {
      EXPECT_LT(batch_of(node.probe_peers(0)), node.batch()) << i << ": no peer on the new config";
    }
    if (node.batch() < last) {
      EXPECT_GT(batch_of(node.probe_peers(node.batch() > 0 ? 1 : 0)), node.batch()) << i << ": no peer on the old one";
    }
  }
}

TEST(RolloutProbePeers, SpreadOverTheCandidatesAndBounded) {
  // 1000 nodes, canary 10, batches up to 100: no node is every node's peer.
  roced::v1::RolloutState s = StateOf(1000, 10, "100");
  AssignProbePeers(&s);
  std::map<std::string, int> probed;
  for (const auto& n : s.nodes()) {
    for (const auto& p : n.probe_peers()) ++probed[p];
  }
  int most = 0;
  for (const auto& [peer, count] : probed) most = std::max(most, count);
  EXPECT_LE(most, 30) << "one peer probed by " << most << " of 1000 nodes";
  EXPECT_GT(probed.size(), 500u);
  // Per node: at most kMaxConfirmProbePeers however many are asked for;
  // one target has no peer; two have each other.
  s = StateOf(20, 1, "5");
  AssignProbePeers(&s, 100);
  EXPECT_EQ(s.nodes(0).probe_peers_size(), static_cast<int>(model::kMaxConfirmProbePeers));
  s = StateOf(1, 1, "1");
  AssignProbePeers(&s);
  EXPECT_TRUE(PeersOf(s, 0).empty());
  s = StateOf(2, 1, "1");
  AssignProbePeers(&s);
  EXPECT_THAT(PeersOf(s, 0), ElementsAre("a1:1"));
  EXPECT_THAT(PeersOf(s, 1), ElementsAre("a0:1"));
  // Asked again with 0: cleared.
  AssignProbePeers(&s, 0);
  EXPECT_TRUE(PeersOf(s, 0).empty());
}

TEST(RolloutProbePeers, OnlyProbeAndMeshGatesSendTraffic) {
  auto sends = [](const std::string& spec) {
    auto p = model::ParseConfirmPolicy(spec);
    EXPECT_TRUE(p.ok()) << spec << ": " << p.status();
    return p.ok() && model::SendsTraffic(*p);
  };
  EXPECT_FALSE(sends(kDefaultRolloutPolicy));
  EXPECT_FALSE(sends("window=10s,converged"));
  EXPECT_TRUE(sends("window=10s,converged,probe=node2"));
  EXPECT_TRUE(sends("window=10s,mesh-loss=0.01"));
  EXPECT_TRUE(sends("window=10s,mesh-p99=2"));
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

// A scratch directory of its own for each test.
std::string ScratchDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/rollout_journal_test_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string ReadAll(const std::string& path) {
  absl::StatusOr<std::string> text = util::ReadFile(path);
  return text.ok() ? *text : std::string();
}

void WriteAll(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// The snapshot alone, without its journal.
roced::v1::RolloutState SnapshotOnly(const std::string& path) {
  roced::v1::RolloutState state;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(ReadAll(path), &state).ok());
  return state;
}

roced::v1::RolloutState ThreeNodes() {
  roced::v1::RolloutState state =
      NewRolloutState({{"n1", "127.0.0.1:1"}, {"n2", "127.0.0.1:2"}, {"n3", "127.0.0.1:3"}}, {1, 2});
  state.set_config_path("good.yaml");
  *state.mutable_config() = ConfigWithMode(roced::v1::MODE_ENFORCE);
  return state;
}

void Applying(roced::v1::RolloutState* state, int i, uint64_t previous) {
  auto* n = state->mutable_nodes(i);
  n->set_state(roced::v1::ROLLOUT_NODE_STATE_APPLYING);
  n->set_previous_generation(previous);
  *n->mutable_previous_config() = ConfigWithMode(roced::v1::MODE_OBSERVE);
  n->mutable_applied_at()->set_seconds(1000 + i);
}

void ExpectLoads(const std::string& path, const roced::v1::RolloutState& want) {
  auto loaded = LoadRolloutState(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*loaded, want))
      << "loaded:\n" << loaded->DebugString() << "want:\n" << want.DebugString();
}

TEST(RolloutJournal, SnapshotAndJournalRoundTrip) {
  const std::string dir = ScratchDir("round_trip");
  const std::string path = dir + "/rollout.json";
  roced::v1::RolloutState state = ThreeNodes();
  RolloutStateWriter writer(path);
  ASSERT_TRUE(writer.Start(&state).ok());
  Applying(&state, 0, 7);
  ASSERT_TRUE(writer.Record(&state, 0, /*durable=*/true).ok());
  state.mutable_nodes(0)->set_state(roced::v1::ROLLOUT_NODE_STATE_WAITING);
  state.mutable_nodes(0)->set_generation(8);
  state.mutable_updated_at()->set_seconds(2000);
  ASSERT_TRUE(writer.Record(&state, 0, false).ok());
  EXPECT_EQ(state.journal_seq(), 2u);
  ExpectLoads(path, state);
  // The snapshot is still the first one; the two steps are lines.
  EXPECT_EQ(SnapshotOnly(path).nodes(0).state(), roced::v1::ROLLOUT_NODE_STATE_PENDING);
  const std::string journal = ReadAll(RolloutJournalPath(path));
  EXPECT_EQ(std::count(journal.begin(), journal.end(), '\n'), 2);
  EXPECT_EQ(writer.bytes_written(), writer.snapshot_bytes() + journal.size());
  // A phase change is a snapshot: the journal is emptied.
  state.set_phase(roced::v1::ROLLOUT_PHASE_HALTED);
  ASSERT_TRUE(writer.Snapshot(&state).ok());
  EXPECT_EQ(ReadAll(RolloutJournalPath(path)), "");
  EXPECT_EQ(SnapshotOnly(path).journal_seq(), 2u);
  ExpectLoads(path, state);
  std::filesystem::remove_all(dir);
}

TEST(RolloutJournal, RecordsReplayInOrderTheLastOneWinning) {
  roced::v1::RolloutState state = ThreeNodes();
  roced::v1::RolloutState snapshot = state;
  std::string journal;
  uint64_t seq = 0;
  const auto record = [&](int i) {
    roced::v1::RolloutRecord r;
    r.set_seq(++seq);
    r.set_index(static_cast<uint32_t>(i));
    *r.mutable_node() = state.nodes(i);
    std::string line;
    ASSERT_TRUE(google::protobuf::util::MessageToJsonString(r, &line).ok());
    journal += line + "\n";
  };
  Applying(&state, 1, 3);
  record(1);
  Applying(&state, 2, 4);
  record(2);
  state.mutable_nodes(1)->set_state(roced::v1::ROLLOUT_NODE_STATE_WAITING);
  record(1);
  state.mutable_nodes(1)->set_state(roced::v1::ROLLOUT_NODE_STATE_CONFIRMED);
  record(1);
  ASSERT_TRUE(ReplayRolloutJournal(journal, &snapshot).ok());
  state.set_journal_seq(4);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(snapshot, state));
  EXPECT_EQ(snapshot.nodes(1).state(), roced::v1::ROLLOUT_NODE_STATE_CONFIRMED);
  EXPECT_EQ(snapshot.nodes(2).previous_generation(), 4u);
}

TEST(RolloutJournal, TornLastLineIsIgnored) {
  const std::string dir = ScratchDir("torn");
  const std::string path = dir + "/rollout.json";
  roced::v1::RolloutState state = ThreeNodes();
  RolloutStateWriter writer(path);
  ASSERT_TRUE(writer.Start(&state).ok());
  Applying(&state, 0, 7);
  ASSERT_TRUE(writer.Record(&state, 0, true).ok());
  const roced::v1::RolloutState before = state;
  const std::string whole = ReadAll(RolloutJournalPath(path));
  Applying(&state, 1, 9);
  ASSERT_TRUE(writer.Record(&state, 1, true).ok());
  const std::string longer = ReadAll(RolloutJournalPath(path));
  // Killed anywhere inside the second record's write(): every prefix
  // short of its newline reads as the state before it.
  for (size_t cut = whole.size(); cut < longer.size(); cut += 7) {
    SCOPED_TRACE(cut);
    WriteAll(RolloutJournalPath(path), longer.substr(0, cut));
    ExpectLoads(path, before);
  }
  WriteAll(RolloutJournalPath(path), longer.substr(0, longer.size() - 1));  // all but the newline
  ExpectLoads(path, before);
  WriteAll(RolloutJournalPath(path), longer);
  ExpectLoads(path, state);
  // A bad line with a line after it is not a torn write: named.
  WriteAll(RolloutJournalPath(path), "{\"seq\": \n" + longer);
  auto bad = LoadRolloutState(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("rollout.json.journal: line 1: not a rollout record"));
  std::filesystem::remove_all(dir);
}

// The crash between a snapshot's rename and its journal's emptying: the
// old records are left beside a snapshot that already holds them, and one
// that changed a node past them (a retry's reset).
TEST(RolloutJournal, StaleRecordsNeitherLoseNorRegress) {
  const std::string dir = ScratchDir("stale");
  const std::string path = dir + "/rollout.json";
  roced::v1::RolloutState state = ThreeNodes();
  RolloutStateWriter writer(path);
  ASSERT_TRUE(writer.Start(&state).ok());
  Applying(&state, 0, 7);
  ASSERT_TRUE(writer.Record(&state, 0, true).ok());
  auto* n = state.mutable_nodes(0);
  n->set_state(roced::v1::ROLLOUT_NODE_STATE_ROLLED_BACK);
  n->set_generation(8);
  n->set_reason("probe");
  ASSERT_TRUE(writer.Record(&state, 0, false).ok());
  Applying(&state, 1, 2);
  ASSERT_TRUE(writer.Record(&state, 1, true).ok());
  const std::string old_journal = ReadAll(RolloutJournalPath(path));
  // Resume: the halted rollout's failed node is reset, a snapshot written...
  state.set_phase(roced::v1::ROLLOUT_PHASE_HALTED);
  EXPECT_EQ(ResetFailedForRetry(&state), 1);
  ASSERT_TRUE(writer.Snapshot(&state).ok());
  // ... and rocectl dies before the journal is emptied.
  WriteAll(RolloutJournalPath(path), old_journal);
  auto loaded = LoadRolloutState(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->nodes(0).state(), roced::v1::ROLLOUT_NODE_STATE_PENDING);   // not regressed
  EXPECT_EQ(loaded->nodes(1).state(), roced::v1::ROLLOUT_NODE_STATE_APPLYING);  // not lost
  EXPECT_EQ(loaded->nodes(1).previous_generation(), 2u);
  ExpectLoads(path, state);
  // The next rocectl folds that into a snapshot and goes on numbering.
  RolloutStateWriter next(path);
  ASSERT_TRUE(next.Snapshot(&*loaded).ok());
  EXPECT_EQ(ReadAll(RolloutJournalPath(path)), "");
  loaded->mutable_nodes(2)->set_state(roced::v1::ROLLOUT_NODE_STATE_APPLYING);
  ASSERT_TRUE(next.Record(&*loaded, 2, true).ok());
  EXPECT_EQ(loaded->journal_seq(), 4u);
  ExpectLoads(path, *loaded);
  std::filesystem::remove_all(dir);
}

TEST(RolloutJournal, GapsAndForeignRecordsAreNamed) {
  roced::v1::RolloutState state = ThreeNodes();
  state.set_journal_seq(5);
  const auto line = [&](uint64_t seq, uint32_t index, const std::string& address) {
    roced::v1::RolloutRecord r;
    r.set_seq(seq);
    r.set_index(index);
    r.mutable_node()->set_address(address);
    std::string json;
    EXPECT_TRUE(google::protobuf::util::MessageToJsonString(r, &json).ok());
    return json + "\n";
  };
  roced::v1::RolloutState copy = state;
  // A snapshot written between the two reads: the records jump past it.
  absl::Status gap = ReplayRolloutJournal(line(8, 0, "127.0.0.1:1"), &copy);
  EXPECT_TRUE(absl::IsAborted(gap)) << gap;
  EXPECT_THAT(gap.message(), HasSubstr("record 8 where 6 was due"));
  copy = state;
  absl::Status foreign = ReplayRolloutJournal(line(6, 1, "10.9.9.9:1"), &copy);
  EXPECT_TRUE(absl::IsInvalidArgument(foreign)) << foreign;
  EXPECT_THAT(foreign.message(), HasSubstr("not this rollout's"));
  copy = state;
  EXPECT_TRUE(absl::IsInvalidArgument(ReplayRolloutJournal(line(6, 3, "127.0.0.1:4"), &copy)));
  // Records at or below the snapshot's number are skipped.
  copy = state;
  ASSERT_TRUE(ReplayRolloutJournal(line(4, 0, "127.0.0.1:1") + line(6, 0, "127.0.0.1:1"), &copy).ok());
  EXPECT_EQ(copy.journal_seq(), 6u);
}

TEST(RolloutJournal, ANewRolloutDropsAnOlderJournal) {
  const std::string dir = ScratchDir("new");
  const std::string path = dir + "/rollout.json";
  roced::v1::RolloutState old = ThreeNodes();
  RolloutStateWriter writer(path);
  ASSERT_TRUE(writer.Start(&old).ok());
  Applying(&old, 0, 7);
  ASSERT_TRUE(writer.Record(&old, 0, true).ok());
  // The state file removed by hand, its journal left: a new rollout of the
  // same targets must not read the old one's records.
  std::filesystem::remove(path);
  roced::v1::RolloutState fresh = ThreeNodes();
  RolloutStateWriter again(path);
  ASSERT_TRUE(again.Start(&fresh).ok());
  ExpectLoads(path, fresh);
  EXPECT_EQ(ReadAll(RolloutJournalPath(path)), "");
  std::filesystem::remove_all(dir);
}

// A whole rollout's steps as the Runner records them: per batch, each node
// applying (durable), waiting, its gates, confirmed; a snapshot at the end.
uint64_t RolloutBytes(const std::string& path, size_t nodes, uint32_t max_unavailable) {
  std::vector<RolloutTarget> targets;
  for (size_t i = 0; i < nodes; ++i) targets.push_back({absl::StrCat("node", i), absl::StrCat("10.0.0.1:", i + 1)});
  auto plan = PlanBatches(nodes, 1, max_unavailable);
  EXPECT_TRUE(plan.ok());
  roced::v1::RolloutState state = NewRolloutState(targets, *plan);
  RolloutStateWriter writer(path);
  EXPECT_TRUE(writer.Start(&state).ok());
  for (int i = 0; i < state.nodes_size(); ++i) {
    Applying(&state, i, 3);
    EXPECT_TRUE(writer.Record(&state, i, false).ok());
    state.mutable_nodes(i)->set_state(roced::v1::ROLLOUT_NODE_STATE_WAITING);
    state.mutable_nodes(i)->set_generation(4);
    EXPECT_TRUE(writer.Record(&state, i, false).ok());
    state.mutable_nodes(i)->add_gates()->set_gate("converged");
    EXPECT_TRUE(writer.Record(&state, i, false).ok());
    state.mutable_nodes(i)->set_state(roced::v1::ROLLOUT_NODE_STATE_CONFIRMED);
    EXPECT_TRUE(writer.Record(&state, i, false).ok());
    // The journal never holds more than a state's worth (and a line).
    EXPECT_LE(writer.journal_bytes(), std::max(writer.snapshot_bytes(), RolloutStateWriter::kMinJournalBytes) + 4096);
  }
  state.set_phase(roced::v1::ROLLOUT_PHASE_DONE);
  EXPECT_TRUE(writer.Snapshot(&state).ok());
  ExpectLoads(path, state);
  return writer.bytes_written();
}

TEST(RolloutJournal, AWholeRolloutWritesLinearlyInItsNodes) {
  const std::string dir = ScratchDir("linear");
  const uint64_t small = RolloutBytes(dir + "/small.json", 250, 1);
  const uint64_t large = RolloutBytes(dir + "/large.json", 1000, 1);
  // Four times the nodes: about four times the bytes (rewriting the whole
  // state after every step wrote sixteen times).
  EXPECT_LT(large, small * 5) << small << " " << large;
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
}  // namespace roced::rollout

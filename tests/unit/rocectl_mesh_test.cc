// rocectl mesh's report without agents: answers built from real pinglists
// (lib/mesh/pinglist) for a small fleet, one host losing every probe it
// sends or answers -> its RNIC is the suspect in the report, the table and
// the JSON; the same host whose agent says it is busy, or whose answers its
// probers saw held long, is a host finding with the reason; a healthy fleet
// has none; a series naming a non-member is skipped and counted (its hold
// marks nothing); an inventory member without a ToR takes its agent's, or,
// when its agent is silent, what its peers' agents say; the table shows a
// latency suspect's slow answers and each suspect's reference.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "mesh/pinglist.h"
#include "tools/rocectl/format.h"
#include "tools/rocectl/mesh_format.h"
#include "util/proto_time.h"

namespace roced::ctl {
namespace {

using ::testing::HasSubstr;

// 2 ToRs x 3 hosts.
std::vector<mesh::Member> Fleet() {
  std::vector<mesh::Member> out;
  for (int t = 1; t <= 2; ++t) {
    for (int h = 1; h <= 3; ++h) {
      const std::string name = absl::StrCat("t", t, "h", h);
      out.push_back({name, absl::StrCat("10.0.", t, ".", h, ":7471"), absl::StrCat("tor", t), "pod"});
    }
  }
  return out;
}

// Every agent's answer: each pinglist entry probed 200 times at 64 B and
// 1 KiB (DSCP 26), all lost when either end is `dead`. `dead`'s agent does
// not answer, unless it says why its host is busy (`busy`).
std::vector<MeshAnswer> Answers(const std::vector<mesh::Member>& fleet, const std::string& dead,
                                const std::string& busy = "") {
  std::vector<MeshAnswer> out;
  for (const mesh::Member& m : fleet) {
    MeshAnswer a{m.name, m.address, roced::v1::ListMeshResultsResponse(), ""};
    if (m.name == dead && busy.empty()) {
      a.response.reset();
      a.error = "UNAVAILABLE: connection refused";
      out.push_back(a);
      continue;
    }
    a.response->set_node_name(m.name);
    a.response->set_tor(m.tor);
    a.response->set_pod(m.pod);
    a.response->set_clock("software");
    if (m.name == dead) a.response->set_host_busy(busy);
    *a.response->mutable_window() = util::ToProto(absl::Seconds(60));
    absl::StatusOr<mesh::Pinglist> list = mesh::ComputePinglist(m.name, fleet, {});
    EXPECT_TRUE(list.ok()) << list.status();
    for (const mesh::PinglistEntry& e : list->entries) {
      roced::v1::MeshPeer* p = a.response->add_peers();
      p->set_name(e.peer);
      p->set_tor(e.tor);
      p->set_reachable(true);
      for (uint32_t size : {64u, 1024u}) {
        roced::v1::MeshSeries* s = a.response->add_series();
        s->set_peer(e.peer);
        s->set_peer_tor(e.tor);
        s->set_size_bytes(size);
        s->set_dscp(26);
        s->set_sent(200);
        s->set_lost(e.peer == dead || m.name == dead ? 200 : 0);
        if (s->lost() == 0) *s->mutable_rtt_p99() = util::ToProto(absl::Microseconds(e.tor == m.tor ? 8 : 15));
      }
    }
    out.push_back(a);
  }
  return out;
}

TEST(MeshReport, ADeadHostIsTheSuspectInTableAndJson) {
  std::vector<mesh::Member> fleet = Fleet();
  absl::StatusOr<roced::v1::MeshReport> r = BuildMeshReport(fleet, Answers(fleet, "t1h2"), {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->agents_asked(), 6u);
  EXPECT_EQ(r->agents_answered(), 5u);
  ASSERT_FALSE(r->suspects().empty());
  EXPECT_EQ(r->suspects(0).kind(), "rnic");
  EXPECT_EQ(r->suspects(0).symptom(), "loss");
  EXPECT_EQ(r->suspects(0).component(), "t1h2");
  EXPECT_FALSE(r->suspects(0).has_size_bytes());  // every size lost
  EXPECT_GT(r->suspects(0).confidence(), 0.9);
  EXPECT_EQ(r->series_skipped(), 0u);
  const std::string table = MeshTable(*r);
  EXPECT_THAT(table, HasSubstr("Mesh: 5 of 6 agent(s) answered"));
  EXPECT_THAT(table, HasSubstr("no answer: t1h2 (10.0.1.2:7471): UNAVAILABLE: connection refused"));
  EXPECT_THAT(table, HasSubstr("1. rnic t1h2"));
  EXPECT_THAT(table, HasSubstr(", reference "));
  EXPECT_THAT(table, HasSubstr("p99 15.0us"));  // the worst round trip across ToRs, in microseconds
  // The JSON is the proto3 mapping of the report and reads back.
  roced::v1::MeshReport back;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(ToJson(*r), &back).ok());
  EXPECT_EQ(back.suspects(0).component(), "t1h2");
  EXPECT_THAT(ToJson(*r), HasSubstr("\"kind\": \"rnic\""));
  // tor1 -> tor2 and back, and each ToR to itself.
  EXPECT_EQ(r->matrix_size(), 4);
}

TEST(MeshReport, AHealthyFleetHasNoSuspect) {
  std::vector<mesh::Member> fleet = Fleet();
  absl::StatusOr<roced::v1::MeshReport> r = BuildMeshReport(fleet, Answers(fleet, ""), {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->suspects().empty());
  EXPECT_EQ(r->lost(), 0u);
  EXPECT_GT(r->sent(), 0u);
  EXPECT_THAT(MeshTable(*r), HasSubstr("No suspects: every scope is in line with its peers and its history."));
  mesh::LocalizeOptions floor;
  floor.baseline_loss = 1e-4;
  r = BuildMeshReport(fleet, Answers(fleet, ""), floor);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(MeshTable(*r), HasSubstr("in line with its peers and its history (floor 0.0001)."));
}

// The host t1h2's agent answers, saying its CPU is starved; everything it
// sent and answered was lost: the finding is the host, with the reason.
TEST(MeshReport, AHostWhoseAgentSaysItIsBusyIsAHostFinding) {
  std::vector<mesh::Member> fleet = Fleet();
  absl::StatusOr<roced::v1::MeshReport> r =
      BuildMeshReport(fleet, Answers(fleet, "t1h2", "CPU pressure 95% (some avg10)"), {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->agents_answered(), 6u);
  ASSERT_FALSE(r->suspects().empty());
  EXPECT_EQ(r->suspects(0).kind(), "host");
  EXPECT_EQ(r->suspects(0).component(), "t1h2");
  EXPECT_EQ(r->suspects(0).host_reason(), "CPU pressure 95% (some avg10)");
  EXPECT_THAT(MeshTable(*r), HasSubstr("     host: CPU pressure 95% (some avg10)\n"));
}

// t1h2's agent is silent, but its peers saw its answers held 900 ms (p99)
// before half of them timed out: the finding is the host, as they saw it.
TEST(MeshReport, AnswersHeldLongMakeTheResponderAHostFinding) {
  std::vector<mesh::Member> fleet = Fleet();
  std::vector<MeshAnswer> answers = Answers(fleet, "t1h2");
  for (MeshAnswer& a : answers) {
    if (!a.response.has_value()) continue;
    for (roced::v1::MeshSeries& s : *a.response->mutable_series()) {
      if (s.peer() != "t1h2") continue;
      s.set_lost(100);
      *s.mutable_responder_hold_p99() = util::ToProto(absl::Milliseconds(900));
    }
    // Held just at the threshold marks nothing.
    *a.response->mutable_series(0)->mutable_responder_hold_p99() = util::ToProto(absl::Milliseconds(500));
  }
  absl::StatusOr<roced::v1::MeshReport> r = BuildMeshReport(fleet, answers, {});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_FALSE(r->suspects().empty());
  EXPECT_EQ(r->suspects(0).kind(), "host");
  EXPECT_EQ(r->suspects(0).component(), "t1h2");
  EXPECT_THAT(r->suspects(0).host_reason(), ::testing::MatchesRegex("answers held p99 900 ms, seen by t.h.*"));
  for (const roced::v1::MeshSuspect& s : r->suspects()) {
    if (s.component() == "t1h2") continue;
    EXPECT_EQ(s.host_reason(), "") << s.component();
  }
}

// The table of a report: a latency suspect counts slow answers of those
// answered; the slow probes in the header.
TEST(MeshReport, TheTableSaysALatencySuspectsSlowAnswersAndItsReference) {
  roced::v1::MeshReport r;
  r.set_agents_asked(1);
  r.set_agents_answered(1);
  r.set_sent(1000);
  r.set_lost(2);
  r.set_slow(40);
  roced::v1::MeshSuspect* s = r.add_suspects();
  s->set_kind("tor");
  s->set_component("tor1");
  s->set_symptom("latency");
  s->set_sent(380);
  s->set_lost(30);
  s->set_reference(0.005);
  s->set_confidence(0.97);
  const std::string table = MeshTable(r);
  EXPECT_THAT(table, HasSubstr("1000 probes, 2 lost (0.20%), 40 slow"));
  EXPECT_THAT(table, HasSubstr("slow 30/380 answered (7.89%), reference 0.5%, confidence 0.97"));
}

// Without an answer, or without a probe sent, there is nothing to judge:
// the table says so instead of "No suspects".
TEST(MeshReport, NoAnswerOrNoProbeIsNoDataNotNoSuspects) {
  std::vector<mesh::Member> fleet = Fleet();
  std::vector<MeshAnswer> none;
  for (const mesh::Member& m : fleet) none.push_back({m.name, m.address, std::nullopt, "UNAVAILABLE: refused"});
  absl::StatusOr<roced::v1::MeshReport> r = BuildMeshReport(fleet, none, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->agents_answered(), 0u);
  EXPECT_THAT(MeshTable(*r), HasSubstr("No data: no agent answered"));
  EXPECT_THAT(MeshTable(*r), ::testing::Not(HasSubstr("No suspects")));

  std::vector<MeshAnswer> silent = Answers(fleet, "");
  for (MeshAnswer& a : silent) a.response->clear_series();
  r = BuildMeshReport(fleet, silent, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->sent(), 0u);
  EXPECT_THAT(MeshTable(*r), HasSubstr("No data: the agents that answered have sent no mesh probes yet"));
  EXPECT_THAT(MeshTable(*r), ::testing::Not(HasSubstr("No suspects")));
}

TEST(MeshReport, SeriesOfNonMembersAreSkippedAndCounted) {
  std::vector<mesh::Member> fleet = Fleet();
  std::vector<MeshAnswer> answers = Answers(fleet, "");
  roced::v1::MeshSeries* s = answers[0].response->add_series();
  s->set_peer("stranger");
  s->set_sent(10);
  *s->mutable_responder_hold_p99() = util::ToProto(absl::Seconds(1));  // not a member: not marked, not fatal
  absl::StatusOr<roced::v1::MeshReport> r = BuildMeshReport(fleet, answers, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->series_skipped(), 1u);
  EXPECT_THAT(MeshTable(*r), HasSubstr("1 series skipped"));
}

TEST(MeshReport, MembersWithoutATorTakeTheAgentsOrTheirPeers) {
  std::vector<mesh::Member> fleet = Fleet();
  std::vector<MeshAnswer> answers = Answers(fleet, "t2h3");
  // t2h3's peers report its ToR (as roced does from their inventories).
  for (MeshAnswer& a : answers) {
    if (!a.response.has_value()) continue;
    roced::v1::MeshPeer* p = a.response->add_peers();
    p->set_name("t2h3");
    p->set_tor("tor2");
  }
  std::vector<mesh::Member> inventory = fleet;
  for (mesh::Member& m : inventory) m.tor.clear();  // "-" in the file
  absl::StatusOr<roced::v1::MeshReport> r = BuildMeshReport(inventory, answers, {});
  ASSERT_TRUE(r.ok());
  std::set<std::string> tors;
  for (const auto& c : r->matrix()) tors.insert(c.from_tor());
  EXPECT_EQ(tors, (std::set<std::string>{"tor1", "tor2"}));
  ASSERT_FALSE(r->suspects().empty());
  EXPECT_EQ(r->suspects(0).component(), "t2h3");  // a host, not a ToR of its own
}

TEST(MeshReport, WithoutAnInventoryTheMembersAreTheAgentsAndTheirPeers) {
  std::vector<mesh::Member> fleet = Fleet();
  std::vector<MeshAnswer> answers = Answers(fleet, "");
  std::vector<MeshAnswer> one = {answers[0]};
  absl::StatusOr<roced::v1::MeshReport> r = BuildMeshReport({}, one, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->series_skipped(), 0u);
  EXPECT_GT(r->sent(), 0u);
  // One agent: its series are listed.
  EXPECT_THAT(MeshTable(*r), HasSubstr("LOST SOURCE PORTS"));
}

TEST(MeshReport, BadBaselineIsRefusedByName) {
  mesh::LocalizeOptions options;
  options.baseline_loss = 0.5;
  absl::StatusOr<roced::v1::MeshReport> r = BuildMeshReport(Fleet(), {}, options);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("baseline_loss"));
}

}  // namespace
}  // namespace roced::ctl

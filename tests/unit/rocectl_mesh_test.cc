// rocectl mesh's report without agents: answers built from real pinglists
// (lib/mesh/pinglist) for a small fleet, one host losing every probe it
// sends or answers -> that host is the suspect in the report, the table and
// the JSON; a healthy fleet has none; a series naming a non-member is
// skipped and counted; an inventory member without a ToR takes its agent's,
// or, when its agent is silent, what its peers' agents say.
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
// 1 KiB (DSCP 26), all lost when either end is `dead`.
std::vector<MeshAnswer> Answers(const std::vector<mesh::Member>& fleet, const std::string& dead) {
  std::vector<MeshAnswer> out;
  for (const mesh::Member& m : fleet) {
    MeshAnswer a{m.name, m.address, roced::v1::ListMeshResultsResponse(), ""};
    if (m.name == dead) {
      a.response.reset();
      a.error = "UNAVAILABLE: connection refused";
      out.push_back(a);
      continue;
    }
    a.response->set_node_name(m.name);
    a.response->set_tor(m.tor);
    a.response->set_pod(m.pod);
    a.response->set_clock("software");
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
        s->set_lost(e.peer == dead ? 200 : 0);
        if (e.peer != dead) *s->mutable_rtt_p99() = util::ToProto(absl::Microseconds(e.tor == m.tor ? 8 : 15));
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
  EXPECT_EQ(r->suspects(0).kind(), "host");
  EXPECT_EQ(r->suspects(0).component(), "t1h2");
  EXPECT_FALSE(r->suspects(0).has_size_bytes());  // every size lost
  EXPECT_GT(r->suspects(0).confidence(), 0.9);
  EXPECT_EQ(r->series_skipped(), 0u);
  const std::string table = MeshTable(*r);
  EXPECT_THAT(table, HasSubstr("Mesh: 5 of 6 agent(s) answered"));
  EXPECT_THAT(table, HasSubstr("no answer: t1h2 (10.0.1.2:7471): UNAVAILABLE: connection refused"));
  EXPECT_THAT(table, HasSubstr("1. host t1h2"));
  EXPECT_THAT(table, HasSubstr("p99 15.0us"));  // the worst round trip across ToRs, in microseconds
  // The JSON is the proto3 mapping of the report and reads back.
  roced::v1::MeshReport back;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(ToJson(*r), &back).ok());
  EXPECT_EQ(back.suspects(0).component(), "t1h2");
  EXPECT_THAT(ToJson(*r), HasSubstr("\"kind\": \"host\""));
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
  EXPECT_THAT(MeshTable(*r), HasSubstr("No suspects: every scope is within the baseline loss (0.0001)"));
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

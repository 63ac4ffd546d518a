// The mesh's probe schedule: the default rates per peer, every class
// (size, DSCP, flow label) coming round, phases spread over the interval,
// no burst after a stall, a pinglist change keeping what stays, slowing
// down without stopping, and options out of range refused by name.
#include "mesh/schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>

namespace roced::mesh {
namespace {

constexpr int64_t kMs = 1000 * 1000;
constexpr int64_t kS = 1000 * kMs;

Pinglist List(std::initializer_list<std::pair<const char*, PeerScope>> peers) {
  Pinglist out;
  for (const auto& [name, scope] : peers) out.entries.push_back({name, "tor", scope});
  return out;
}

MeshSchedule Make(const std::string& self, MeshScheduleOptions options = {}) {
  absl::StatusOr<MeshSchedule> s = MeshSchedule::Create(self, options);
  EXPECT_TRUE(s.ok()) << s.status();
  return *std::move(s);
}

// Every probe due from `from` to `to`, asking each millisecond.
std::vector<ScheduledProbe> DueBetween(MeshSchedule& s, int64_t from, int64_t to) {
  std::vector<ScheduledProbe> out;
  for (int64_t t = from; t < to; t += kMs) {
    for (ScheduledProbe& p : s.Due(t, 1000)) out.push_back(std::move(p));
  }
  return out;
}

TEST(MeshProbeSchedule, DefaultRatesTenASecondUnderTheTorOneAcross) {
  MeshSchedule s = Make("t0-h0");
  s.SetPinglist(List({{"t0-h1", PeerScope::kSameTor}, {"t0-h2", PeerScope::kSameTor},
                      {"t5-h3", PeerScope::kSamePod}, {"t9-h1", PeerScope::kOtherPod}}),
                0);
  EXPECT_DOUBLE_EQ(s.ProbesPerSecond(), 22);
  std::map<std::string, int> count;
  for (const ScheduledProbe& p : DueBetween(s, 0, 10 * kS)) ++count[p.peer];
  EXPECT_EQ(count["t0-h1"], 100);
  EXPECT_EQ(count["t0-h2"], 100);
  EXPECT_EQ(count["t5-h3"], 10);
  EXPECT_EQ(count["t9-h1"], 10);
}

TEST(MeshProbeSchedule, EveryClassComesRoundSizeFastest) {
  MeshSchedule s = Make("a", {.sizes = {64, 1024, 0}, .dscps = {26, 0}, .flow_labels = 4});
  s.SetPinglist(List({{"b", PeerScope::kSameTor}}), 0);
  std::vector<ScheduledProbe> probes = DueBetween(s, 0, 3 * kS);  // 30 probes
  ASSERT_GE(probes.size(), 24u);
  EXPECT_EQ(probes[0].size_bytes, 64u);
  EXPECT_EQ(probes[1].size_bytes, 1024u);
  EXPECT_EQ(probes[2].size_bytes, 0u);  // the path MTU
  EXPECT_EQ(probes[3].dscp, 0u);
  EXPECT_EQ(probes[6].flow_label, 1u);
  std::set<std::tuple<uint32_t, uint32_t, uint32_t>> seen;
  for (size_t i = 0; i < 24; ++i) {
    EXPECT_EQ(probes[i].sequence, i);
    seen.emplace(probes[i].size_bytes, probes[i].dscp, probes[i].flow_label);
  }
  EXPECT_EQ(seen.size(), 24u);  // 3 sizes x 2 DSCPs x 4 flow labels, each once
}

TEST(MeshProbeSchedule, PhasesSpreadOverTheIntervalTheSameOnEveryRun) {
  Pinglist list;
  for (int h = 1; h < 32; ++h) list.entries.push_back({"t0-h" + std::to_string(h), "tor-0", PeerScope::kSameTor});
  MeshSchedule a = Make("t0-h0"), again = Make("t0-h0"), other = Make("t0-h7");
  a.SetPinglist(list, 5 * kS);
  again.SetPinglist(list, 5 * kS);
  other.SetPinglist(list, 5 * kS);
  std::vector<ScheduledProbe> first = a.Due(5 * kS + 100 * kMs, 100);
  ASSERT_EQ(first.size(), 31u);  // each peer once in the first 100 ms
  std::set<int64_t> dues;
  for (const ScheduledProbe& p : first) dues.insert(p.due_ns);
  EXPECT_GE(dues.size(), 30u);
  EXPECT_GE(*dues.begin(), 5 * kS);
  std::vector<ScheduledProbe> same = again.Due(5 * kS + 100 * kMs, 100);
  std::vector<ScheduledProbe> theirs = other.Due(5 * kS + 100 * kMs, 100);
  int equal = 0, differ = 0;
  for (size_t i = 0; i < first.size(); ++i) {
    equal += first[i].due_ns == same[i].due_ns && first[i].peer == same[i].peer;
    differ += first[i].due_ns != theirs[i].due_ns;
  }
  EXPECT_EQ(equal, 31);
  EXPECT_GT(differ, 25);  // another prober has phases of its own
}

TEST(MeshProbeSchedule, AStalledAgentGetsOneProbeAPeerNotABurst) {
  MeshSchedule s = Make("a");
  s.SetPinglist(List({{"b", PeerScope::kSameTor}, {"c", PeerScope::kOtherPod}}), 0);
  DueBetween(s, 0, kS);
  std::vector<ScheduledProbe> after = s.Due(6 * kS, 1000);  // 5 s without a look
  ASSERT_EQ(after.size(), 2u);
  EXPECT_GT(s.NextDue(), 6 * kS);
  EXPECT_LE(s.NextDue(), 6 * kS + 100 * kMs);
  EXPECT_TRUE(s.Due(6 * kS, 1000).empty());
}

TEST(MeshProbeSchedule, APinglistChangeKeepsThePeersThatStay) {
  MeshSchedule s = Make("a");
  s.SetPinglist(List({{"b", PeerScope::kSameTor}, {"c", PeerScope::kSameTor}}), 0);
  DueBetween(s, 0, kS);
  const int64_t next = s.NextDue();
  s.SetPinglist(List({{"b", PeerScope::kSameTor}, {"d", PeerScope::kSameTor}}), kS);
  EXPECT_EQ(s.peers(), 2u);
  std::vector<ScheduledProbe> probes = DueBetween(s, kS, kS + 100 * kMs);
  ASSERT_EQ(probes.size(), 2u);
  for (const ScheduledProbe& p : probes) {
    EXPECT_NE(p.peer, "c");
    if (p.peer == "b") {
      EXPECT_EQ(p.sequence, 10u);  // its rotation goes on
    } else {
      EXPECT_EQ(p.sequence, 0u);
    }
  }
  EXPECT_LE(next, kS + 100 * kMs);
}

TEST(MeshProbeSchedule, SlowsDownUnderPressureButNeverStops) {
  MeshSchedule s = Make("a");
  s.SetPinglist(List({{"b", PeerScope::kSameTor}, {"c", PeerScope::kOtherPod}}), 0);
  s.SetSlowdown(4);
  EXPECT_DOUBLE_EQ(s.ProbesPerSecond(), 11.0 / 4);
  s.SetSlowdown(1e9);
  EXPECT_DOUBLE_EQ(s.slowdown(), kMaxSlowdown);
  s.SetSlowdown(std::numeric_limits<double>::quiet_NaN());
  EXPECT_DOUBLE_EQ(s.slowdown(), 1);
  s.SetSlowdown(0.1);
  EXPECT_DOUBLE_EQ(s.slowdown(), 1);
  s.SetSlowdown(kMaxSlowdown);
  std::map<std::string, int> count;
  for (const ScheduledProbe& p : DueBetween(s, 0, 100 * kS)) ++count[p.peer];
  EXPECT_NEAR(count["b"], 100, 1);  // 1 a second at 10x
  EXPECT_NEAR(count["c"], 10, 1);
}

TEST(MeshProbeSchedule, DueReturnsAtMostMaxAndKeepsTheRest) {
  MeshSchedule s = Make("a");
  Pinglist list;
  for (int h = 0; h < 10; ++h) list.entries.push_back({"p" + std::to_string(h), "tor", PeerScope::kSameTor});
  s.SetPinglist(list, 0);
  EXPECT_EQ(s.Due(100 * kMs, 4).size(), 4u);
  EXPECT_EQ(s.Due(100 * kMs, 100).size(), 6u);
  EXPECT_TRUE(Make("a").Due(kS, 10).empty());
  EXPECT_EQ(Make("a").NextDue(), std::numeric_limits<int64_t>::max());
}

TEST(MeshProbeSchedule, OptionsOutOfRangeAreRefusedNamingTheField) {
  auto error = [](MeshScheduleOptions o) { return std::string(MeshSchedule::Create("a", o).status().message()); };
  EXPECT_EQ(error({.same_tor_per_second = 0}),
            "same_tor_per_second: 0 is out of range; allowed 0.01-1000 probes a second");
  EXPECT_THAT(error({.across_per_second = std::nan("")}), ::testing::StartsWith("across_per_second: nan"));
  EXPECT_EQ(error({.sizes = {}}), "sizes: 0 values; allowed 1-8");
  EXPECT_EQ(error({.sizes = {64, 9001}}), "sizes[1]: 9001 is out of range; allowed 0 (the path MTU) to 9000");
  EXPECT_EQ(error({.dscps = {26, 26}}), "dscps[1]: 26 is listed twice");
  EXPECT_EQ(error({.dscps = {64}}), "dscps[0]: 64 is out of range; allowed 0-63");
  EXPECT_EQ(error({.flow_labels = 0}), "flow_labels: 0 is out of range; allowed 1-256");
}

}  // namespace
}  // namespace roced::mesh

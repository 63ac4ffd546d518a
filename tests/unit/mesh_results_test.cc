// The mesh's per-peer result windows: loss and round-trip quantiles exact
// over what the window holds, slots leaving the window whole into a
// decayed history (also when no probe came since to fold them), slow
// answers against the reference round trip the slots that left taught,
// the responder's hold p99, the bounds refusing what would not fit, and
// sampled slots weighted by what they stand for.
#include "mesh/results.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "mesh/pinglist.h"

namespace roced::mesh {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kUs = 1000;
constexpr int64_t kS = 1000 * 1000 * 1000;

ResultWindows Make(ResultWindowOptions options = {}) {
  absl::StatusOr<ResultWindows> w = ResultWindows::Create(options);
  EXPECT_TRUE(w.ok()) << w.status();
  return *std::move(w);
}

ProbeOutcome Answered(std::string_view peer, int64_t sent_ns, int64_t rtt_ns, uint32_t size = 64) {
  return ProbeOutcome{.peer = peer, .size_bytes = size, .dscp = 26, .sent_ns = sent_ns, .answered = true,
                      .rtt_ns = rtt_ns, .flow_label = 0};
}

ProbeOutcome Lost(std::string_view peer, int64_t sent_ns, uint32_t flow_label) {
  return ProbeOutcome{.peer = peer, .size_bytes = 64, .dscp = 26, .sent_ns = sent_ns, .answered = false,
                      .rtt_ns = 0, .flow_label = flow_label};
}

TEST(MeshResults, LossAndQuantilesOverTheWindow) {
  ResultWindows w = Make();
  // 100 answers of 1..100 us and 5 losses over 50 s (five slots).
  for (int i = 1; i <= 100; ++i) ASSERT_TRUE(w.Record(Answered("node2", i * kS / 2, i * kUs)).ok());
  for (uint32_t label = 1; label <= 5; ++label) {
    ASSERT_TRUE(w.Record(Lost("node2", static_cast<int64_t>(label) * 10 * kS, 49152 + label)).ok());
  }
  std::vector<SeriesWindow> snap = w.Snapshot(51 * kS);
  ASSERT_EQ(snap.size(), 1u);
  const SeriesWindow& s = snap[0];
  EXPECT_EQ(s.peer, "node2");
  EXPECT_EQ(s.size_bytes, 64u);
  EXPECT_EQ(s.dscp, 26u);
  EXPECT_EQ(s.sent, 105u);
  EXPECT_EQ(s.lost, 5u);
  EXPECT_DOUBLE_EQ(s.loss_ratio, 5.0 / 105.0);
  EXPECT_EQ(s.p50_ns, 50 * kUs);
  EXPECT_EQ(s.p99_ns, 99 * kUs);
  EXPECT_THAT(s.lost_flow_labels, ElementsAre(49157, 49156, 49155, 49154, 49153));
}

TEST(MeshResults, TotalsAddEverySeriesUpSinceAMoment) {
  ResultWindows w = Make();  // 60 s, slots of 10 s
  // Before: node2 and node3 answer in 10 us, 1 of node3's lost (slot 0).
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(w.Record(Answered("node2", i * kS / 10, 10 * kUs)).ok());
    ASSERT_TRUE(w.Record(Answered("node3", i * kS / 10, 10 * kUs, 1024)).ok());
  }
  ASSERT_TRUE(w.Record(Lost("node3", 2 * kS, 1)).ok());
  // After 12 s: 100 answers of 100 us over both peers, 1 in 100 at 1 ms,
  // and 10 lost.
  for (int i = 0; i < 200; ++i) {
    const int64_t rtt = i % 100 == 99 ? 1000 * kUs : 100 * kUs;
    ASSERT_TRUE(w.Record(Answered(i % 2 ? "node2" : "node3", 20 * kS + i * kS / 10, rtt)).ok());
  }
  for (uint32_t i = 0; i < 10; ++i) ASSERT_TRUE(w.Record(Lost("node2", 21 * kS, i)).ok());
  WindowTotals all = w.Totals(45 * kS, 0);
  EXPECT_EQ(all.sent, 311u);
  EXPECT_EQ(all.lost, 11u);
  EXPECT_EQ(all.answered, 300u);
  // The slot that began at 10 s is left out when counting since 12 s (it
  // began before): only the probes sent from 20 s count.
  WindowTotals since = w.Totals(45 * kS, 12 * kS);
  EXPECT_EQ(since.sent, 210u);
  EXPECT_EQ(since.lost, 10u);
  EXPECT_EQ(since.answered, 200u);
  // p99 of 198 x 100 us and 2 x 1 ms: within the buckets' 2%.
  EXPECT_NEAR(static_cast<double>(since.p99_ns), 100.0 * kUs, 2.0 * kUs);
  EXPECT_EQ(w.Totals(45 * kS, 50 * kS).sent, 0u);
  EXPECT_EQ(w.Totals(45 * kS, 50 * kS).p99_ns, -1);
  // The window moves on: at 75 s the slots before 20 s have left it.
  EXPECT_EQ(w.Totals(75 * kS, 0).sent, 210u);
}

TEST(MeshResults, SlotsLeaveTheWindowWholeAndExpireFreesTheSeries) {
  ResultWindows w = Make();  // 60 s of six 10 s slots
  ASSERT_TRUE(w.Record(Lost("node2", 1 * kS, 7)).ok());            // slot [0, 10)
  ASSERT_TRUE(w.Record(Answered("node2", 35 * kS, 20 * kUs)).ok());  // slot [30, 40)
  std::vector<SeriesWindow> snap = w.Snapshot(59 * kS);
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].sent, 2u);
  EXPECT_EQ(snap[0].lost, 1u);
  EXPECT_THAT(snap[0].lost_flow_labels, ElementsAre(7));

  snap = w.Snapshot(60 * kS);  // the window is now [10, 70): the loss left it
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].sent, 1u);
  EXPECT_EQ(snap[0].lost, 0u);
  EXPECT_TRUE(snap[0].lost_flow_labels.empty());
  EXPECT_EQ(snap[0].p50_ns, 20 * kUs);

  EXPECT_EQ(w.Expire(89 * kS), 0u);  // [30, 40) is still in [30, 90)
  EXPECT_TRUE(w.Snapshot(100 * kS).empty());
  // Out of the window, the series stays for its history's 60 slots more.
  EXPECT_EQ(w.Expire(100 * kS), 0u);
  EXPECT_EQ(w.Expire(689 * kS), 0u);
  EXPECT_EQ(w.Expire(690 * kS), 1u);
  EXPECT_EQ(w.series(), 0u);
}

TEST(MeshResults, TheRingReusesASlotAndDropsWhatComesTooLate) {
  ResultWindows w = Make();
  ASSERT_TRUE(w.Record(Lost("node2", 5 * kS, 1)).ok());    // epoch 0, ring slot 0
  ASSERT_TRUE(w.Record(Answered("node2", 65 * kS, 9 * kUs)).ok());  // epoch 6 takes ring slot 0
  ASSERT_TRUE(w.Record(Lost("node2", 6 * kS, 2)).ok());    // epoch 0 again: too late
  EXPECT_EQ(w.late(), 1u);
  std::vector<SeriesWindow> snap = w.Snapshot(66 * kS);
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].sent, 1u);
  EXPECT_EQ(snap[0].lost, 0u);
}

// The decay of the history over n slots, as results.h defines it.
double D(int n) { return std::pow(1.0 - 1.0 / kHistorySlots, n); }

ProbeOutcome Held(int64_t sent_ns, int64_t hold_ns) {
  ProbeOutcome o = Answered("node2", sent_ns, 10 * kUs);
  o.hold_ns = hold_ns;
  return o;
}

TEST(MeshResults, SlotsThatLeftTheWindowCountInTheDecayedHistory) {
  ResultWindows w = Make();  // 60 s of six 10 s slots
  // Slot [0, 10): 100 sent, 10 lost; slot [10, 20): 50 sent; one at 55 s.
  for (int i = 0; i < 90; ++i) ASSERT_TRUE(w.Record(Answered("node2", i * kS / 10, 10 * kUs)).ok());
  for (uint32_t i = 0; i < 10; ++i) ASSERT_TRUE(w.Record(Lost("node2", 9 * kS, i)).ok());
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(w.Record(Answered("node2", 10 * kS + i * kS / 10, 10 * kUs)).ok());
  ASSERT_TRUE(w.Record(Answered("node2", 55 * kS, 10 * kUs)).ok());
  std::vector<SeriesWindow> snap = w.Snapshot(59 * kS);
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].sent, 151u);
  EXPECT_EQ(snap[0].hist_sent, 0u);  // nothing has left the window yet

  // At 75 s the window is [20, 80): both slots left it, and no probe came
  // to reuse their ring entries; the snapshot folds them all the same.
  snap = w.Snapshot(75 * kS);
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].sent, 1u);
  EXPECT_EQ(snap[0].hist_sent, static_cast<uint64_t>(std::llround(100 * D(1) + 50)));  // 148
  EXPECT_EQ(snap[0].hist_lost, static_cast<uint64_t>(std::llround(10 * D(1))));       // 10
  EXPECT_EQ(snap[0].hist_slow, 0u);
  // A probe at 71 s reuses the ring entry of [10, 20): the same history.
  ASSERT_TRUE(w.Record(Answered("node2", 71 * kS, 10 * kUs)).ok());
  snap = w.Snapshot(75 * kS);
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].sent, 2u);
  EXPECT_EQ(snap[0].hist_sent, 148u);

  // At 125 s ([70, 130)): the slot of 55 s has left too, and each slot
  // weighs d a slot after it (d = 1 - 1/60): [0, 10) d^6, [10, 20) d^5,
  // [50, 60) d.
  snap = w.Snapshot(125 * kS);
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].sent, 1u);
  const double hist = 100 * D(6) + 50 * D(5) + 1 * D(1);
  EXPECT_EQ(snap[0].hist_sent, static_cast<uint64_t>(std::llround(hist)));
  EXPECT_EQ(snap[0].hist_lost, static_cast<uint64_t>(std::llround(10 * D(6))));
  // The history decays, never grows, with time alone.
  EXPECT_LT(snap[0].hist_sent, 148u);
}

TEST(MeshResults, AProbeOfASlotTheHistoryHoldsComesTooLate) {
  ResultWindows w = Make();
  ASSERT_TRUE(w.Record(Answered("node2", 5 * kS, 10 * kUs)).ok());   // slot [0, 10)
  ASSERT_TRUE(w.Record(Answered("node2", 80 * kS, 10 * kUs)).ok());  // window [30, 90): [0, 30) folded
  // [10, 20)'s ring entry was never used, but the history holds its slot.
  ASSERT_TRUE(w.Record(Lost("node2", 15 * kS, 1)).ok());
  EXPECT_EQ(w.late(), 1u);
  std::vector<SeriesWindow> snap = w.Snapshot(81 * kS);
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].lost, 0u);
  EXPECT_EQ(snap[0].hist_sent, 1u);
  EXPECT_EQ(snap[0].hist_lost, 0u);
}

TEST(MeshResults, AnswersOverFourTimesTheLearnedReferenceAreSlow) {
  ResultWindows w = Make();
  // Slot [0, 10): 20 answers of 100 us and one of 1 ms. No reference yet:
  // nothing is slow.
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(w.Record(Answered("node2", i * kS / 4, 100 * kUs)).ok());
  ASSERT_TRUE(w.Record(Answered("node2", 6 * kS, 1000 * kUs)).ok());
  std::vector<SeriesWindow> snap = w.Snapshot(9 * kS);
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].slow, 0u);
  EXPECT_EQ(snap[0].reference_ns, -1);

  // Slot [60, 70): the first slot left the window and taught its p50,
  // 100 us. 10 answers of 500 us are slow, 10 of 300 us and a loss are not.
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(w.Record(Answered("node2", 60 * kS + i * kS / 2, 500 * kUs)).ok());
    ASSERT_TRUE(w.Record(Answered("node2", 60 * kS + i * kS / 2, 300 * kUs)).ok());
  }
  ASSERT_TRUE(w.Record(Lost("node2", 61 * kS, 1)).ok());
  snap = w.Snapshot(65 * kS);
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].reference_ns, 100 * kUs);
  EXPECT_EQ(snap[0].sent, 21u);
  EXPECT_EQ(snap[0].lost, 1u);
  EXPECT_EQ(snap[0].slow, 10u);
  EXPECT_EQ(snap[0].hist_sent, 21u);
  EXPECT_EQ(snap[0].hist_slow, 0u);
  const std::vector<PathWindow> path = ToPathWindows("node1", snap);
  ASSERT_EQ(path.size(), 1u);
  EXPECT_EQ(path[0].slow, 10u);
  EXPECT_EQ(path[0].hist_sent, 21u);
  EXPECT_EQ(path[0].hist_lost, 0u);

  // When that slot leaves in turn, the reference is the mean of the two
  // slots' p50s (100 and 300 us), and its slow answers are history.
  ASSERT_TRUE(w.Record(Answered("node2", 125 * kS, 100 * kUs)).ok());
  snap = w.Snapshot(125 * kS);
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].reference_ns, 200 * kUs);
  EXPECT_EQ(snap[0].hist_slow, static_cast<uint64_t>(std::llround(10 * D(0))));
  EXPECT_EQ(snap[0].hist_lost, 1u);
}

TEST(MeshResults, TheRespondersHoldP99IsKeptWithinTenPercent) {
  ResultWindows w = Make();
  ASSERT_TRUE(w.Record(Held(kS, -1)).ok());
  std::vector<SeriesWindow> snap = w.Snapshot(2 * kS);
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].hold_p99_ns, -1);  // none known

  // 95 answers held 20 us, 5 held 200 ms: the p99 is 200 ms.
  for (int i = 0; i < 95; ++i) ASSERT_TRUE(w.Record(Held(kS + i, 20 * kUs)).ok());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(w.Record(Held(2 * kS + i, 200 * 1000 * kUs)).ok());
  snap = w.Snapshot(3 * kS);
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_NEAR(static_cast<double>(snap[0].hold_p99_ns), 200e6, 0.05 * 200e6);
  EXPECT_EQ(snap[0].p99_ns, 10 * kUs);  // the round trip is the network's alone

  // The hold leaves with its slot.
  ASSERT_TRUE(w.Record(Held(61 * kS, 30 * kUs)).ok());
  snap = w.Snapshot(61 * kS);
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_NEAR(static_cast<double>(snap[0].hold_p99_ns), 30e3, 0.05 * 30e3);
}

TEST(MeshResults, SeriesAreSortedByPeerSizeAndDscp) {
  ResultWindows w = Make();
  ASSERT_TRUE(w.Record(Answered("node3", kS, kUs, 64)).ok());
  ASSERT_TRUE(w.Record(Answered("node2", kS, kUs, 4096)).ok());
  ASSERT_TRUE(w.Record(Answered("node2", kS, kUs, 1024)).ok());
  ProbeOutcome other_class = Answered("node2", kS, kUs, 1024);
  other_class.dscp = 0;
  ASSERT_TRUE(w.Record(other_class).ok());
  std::vector<std::string> order;
  for (const SeriesWindow& s : w.Snapshot(2 * kS)) {
    order.push_back(s.peer + "/" + std::to_string(s.size_bytes) + "/" + std::to_string(s.dscp));
  }
  EXPECT_THAT(order, ElementsAre("node2/1024/0", "node2/1024/26", "node2/4096/26", "node3/64/26"));
}

TEST(MeshResults, SeriesBeyondTheBoundAreRefusedAndForgetFreesThem) {
  ResultWindows w = Make({.max_keys = 2});
  ASSERT_TRUE(w.Record(Answered("node2", kS, kUs)).ok());
  ASSERT_TRUE(w.Record(Answered("node3", kS, kUs)).ok());
  absl::Status s = w.Record(Answered("node4", kS, kUs));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("2 series (peer, size, DSCP) kept"));
  EXPECT_TRUE(w.Record(Answered("node2", 2 * kS, kUs)).ok());  // a known series still counts
  EXPECT_EQ(w.Forget("node2"), 1u);
  EXPECT_TRUE(w.Record(Answered("node4", kS, kUs)).ok());
  EXPECT_EQ(w.series(), 2u);
}

TEST(MeshResults, BadOutcomesAreRefusedNamingTheFieldAndKeepNothing) {
  ResultWindows w = Make();
  ProbeOutcome bad = Answered("node2", kS, kUs);
  bad.dscp = 64;
  EXPECT_EQ(w.Record(bad).message(), "dscp: 64 is out of range; allowed 0-63");
  EXPECT_EQ(w.Record(Answered("", kS, kUs)).message(), "peer: empty");
  EXPECT_EQ(w.Record(Answered("node2", -1, kUs)).message(), "sent_ns: -1 is negative");
  EXPECT_EQ(w.Record(Answered("node2", kS, -5)).message(), "rtt_ns: -5 is negative");
  EXPECT_EQ(w.series(), 0u);
}

TEST(MeshResults, OptionsOutOfRangeAreRefusedNamingTheField) {
  auto error = [](ResultWindowOptions o) { return std::string(ResultWindows::Create(o).status().message()); };
  EXPECT_EQ(error({.window = absl::ZeroDuration()}), "window: 0 is out of range; allowed 1s to 1h");
  EXPECT_EQ(error({.window = absl::Hours(2)}), "window: 2h is out of range; allowed 1s to 1h");
  EXPECT_EQ(error({.slots = 0}), "slots: 0 is out of range; allowed 1-60");
  EXPECT_EQ(error({.window = absl::Seconds(1), .slots = 20}),
            "slots: 20 slots of a 1s window are shorter than 100ms each");
  EXPECT_EQ(error({.max_keys = 0}), "max_keys: 0 is out of range; allowed 1-65536");
  EXPECT_EQ(error({.max_samples_per_slot = 5000}), "max_samples_per_slot: 5000 is out of range; allowed 1-4096");
}

// A slot past its sample bound keeps a uniform sample whose quantiles stay
// close, and a sampled slot weighs by the answers it stands for, not by the
// samples it kept.
TEST(MeshResults, SampledSlotsKeepQuantilesAndWeighByTheirAnswers) {
  ResultWindows w = Make({.max_samples_per_slot = 64});
  // 10,000 answers in one slot, 0..999 us in a scrambled order.
  for (int i = 0; i < 10000; ++i) {
    const int64_t us = (i * 7919) % 1000;
    ASSERT_TRUE(w.Record(Answered("node2", kS + i, us * kUs)).ok());
  }
  std::vector<SeriesWindow> snap = w.Snapshot(2 * kS);
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_NEAR(static_cast<double>(snap[0].p50_ns), 500.0 * kUs, 150.0 * kUs);
  EXPECT_GE(snap[0].p99_ns, 900 * kUs);

  // Slot A: 1,000 answers of 10 us (kept: 64). Slot B: 100 of 1 ms (all
  // kept). Of the 1,100 answers 91% took 10 us, so p50 is 10 us; counted
  // by kept samples (64 against 100) it would be 1 ms.
  ResultWindows weighted = Make({.max_samples_per_slot = 64});
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(weighted.Record(Answered("node2", kS + i, 10 * kUs)).ok());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(weighted.Record(Answered("node2", 11 * kS + i, 1000 * kUs)).ok());
  snap = weighted.Snapshot(12 * kS);
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].p50_ns, 10 * kUs);
  EXPECT_EQ(snap[0].p99_ns, 1000 * kUs);
}

// From probes to a suspect through the real pieces: every agent of two ToRs
// of four probes its pinglist for a minute at the default rates (10/s to a
// ToR mate, 1/s across) rotating three sizes; each agent's windows go to
// the localizer, which names the one host whose RNIC answers nothing.
TEST(MeshResults, SnapshotsOfAFleetLocalizeADeadRnic) {
  std::vector<Member> fleet;
  for (int t = 0; t < 2; ++t) {
    for (int h = 0; h < 4; ++h) {
      fleet.push_back({absl::StrCat("t", t, "-h", h), absl::StrCat("10.0.", t, ".", h, ":7471"),
                       absl::StrCat("tor-", t), ""});
    }
  }
  const std::string dead = "t1-h2";
  Observations obs(fleet);
  constexpr uint32_t kSizes[] = {64, 1024, 4096};
  for (const Member& prober : fleet) {
    absl::StatusOr<Pinglist> list = ComputePinglist(prober.name, fleet, {});
    ASSERT_TRUE(list.ok()) << list.status();
    ResultWindows w = Make();
    for (const PinglistEntry& e : list->entries) {
      const int per_second = e.scope == PeerScope::kSameTor ? 10 : 1;
      for (int i = 0; i < 60 * per_second; ++i) {
        const int64_t sent = 1 * kS + i * kS / per_second;
        const bool lost = prober.name == dead || e.peer == dead;
        ProbeOutcome o = lost ? Lost(e.peer, sent, 49152 + static_cast<uint32_t>(i % 16))
                              : Answered(e.peer, sent, 8 * kUs);
        o.size_bytes = kSizes[i % 3];
        ASSERT_TRUE(w.Record(o).ok());
      }
    }
    for (const PathWindow& pw : ToPathWindows(prober.name, w.Snapshot(61 * kS))) {
      ASSERT_TRUE(obs.Add(pw).ok());
    }
  }
  absl::StatusOr<Localization> got = Localize(obs, {});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->suspects.size(), 1u);
  EXPECT_EQ(got->suspects[0].kind, SuspectKind::kRnic);
  EXPECT_EQ(got->suspects[0].component, dead);
  EXPECT_FALSE(got->suspects[0].size_bytes.has_value());  // every size lost
}

}  // namespace
}  // namespace roced::mesh

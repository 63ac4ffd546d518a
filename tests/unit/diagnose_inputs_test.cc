// What the agent keeps for three diagnosis checks, driven with the tests'
// own clocks: the congestion counter samples (pause_without_ecn), the link
// flap history (link_flaps) and the probe baselines per driver/firmware
// with their file in the state directory (probe_baseline).
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "metrics/congestion_window.h"
#include "metrics/link_flaps.h"
#include "probe/baseline.h"
#include "test_util.h"
#include "util/fs.h"

namespace roced {
namespace {

using ::testing::HasSubstr;

const absl::Time kT0 = absl::UnixEpoch() + absl::Hours(24 * 365 * 55);

roced::v1::Counter Named(const std::string& name, uint64_t value, std::optional<uint32_t> prio = std::nullopt) {
  roced::v1::Counter c;
  c.set_name(name);
  c.set_value(value);
  if (prio) c.set_priority(*prio);
  return c;
}

TEST(CongestionSamples, ASampleSumsPausesPerPriorityAndEcnCountersPerNetdev) {
  std::vector<roced::v1::CounterSet> sets(3);
  sets[0].set_netdev("eth0");
  sets[0].set_source("hw_counters");
  *sets[0].add_counters() = Named("ecn_marked_packets", 7);
  *sets[0].add_counters() = Named("cnp_sent", 5);
  *sets[0].add_counters() = Named("cnp_handled", 3);
  *sets[0].add_counters() = Named("out_of_sequence", 99);
  sets[1] = sets[0];  // a second port on the same netdev
  sets[2].set_netdev("eth0");
  sets[2].set_source("ethtool");
  *sets[2].add_counters() = Named("pfc_pause_frames_received", 10, 3);
  *sets[2].add_counters() = Named("pfc_pause_frames_sent", 4, 3);
  *sets[2].add_counters() = Named("pfc_pause_frames_sent", 1, 0);
  *sets[2].add_counters() = Named("link_pause_frames_received", 1000);
  metrics::CongestionSample s = metrics::CongestionSampleOf(kT0, sets);
  ASSERT_EQ(s.netdevs.size(), 1u);
  const metrics::CongestionCounters& c = s.netdevs["eth0"];
  EXPECT_EQ(c.pause_frames, (std::map<uint32_t, uint64_t>{{0, 1}, {3, 14}}));
  EXPECT_EQ(c.ecn_marked, 14u);
  EXPECT_EQ(c.cnp_sent, 10u);
  EXPECT_EQ(c.cnp_handled, 6u);
}

metrics::CongestionSample At(absl::Time t, uint64_t pauses) {
  metrics::CongestionSample s;
  s.at = t;
  s.netdevs["eth0"].pause_frames[3] = pauses;
  return s;
}

TEST(CongestionSamples, TheWindowStartsAtTheNewestSampleAMinuteOld) {
  metrics::CongestionSamples ring(absl::Seconds(30), 10, absl::Seconds(60));
  EXPECT_TRUE(ring.Due(kT0));
  ring.Offer(At(kT0, 1));
  EXPECT_FALSE(ring.Due(kT0 + absl::Seconds(29)));
  ring.Offer(At(kT0 + absl::Seconds(29), 2));  // not due: dropped
  EXPECT_EQ(ring.size(), 1u);
  metrics::CongestionWindow w = ring.WindowTo(At(kT0 + absl::Seconds(45), 3));
  EXPECT_FALSE(w.start.has_value()) << "45 s of samples: no window yet";
  EXPECT_EQ(w.sampled_for, absl::Seconds(45));
  ring.Offer(At(kT0 + absl::Seconds(30), 4));
  ring.Offer(At(kT0 + absl::Seconds(60), 5));
  w = ring.WindowTo(At(kT0 + absl::Seconds(95), 6));
  ASSERT_TRUE(w.start.has_value());
  EXPECT_EQ(w.start->at, kT0 + absl::Seconds(30));  // 65 s before; the 35 s old one is too young
  EXPECT_EQ(w.start->netdevs["eth0"].pause_frames[3], 4u);
  EXPECT_EQ(w.end.netdevs["eth0"].pause_frames[3], 6u);
}

TEST(CongestionSamples, TheRingIsBounded) {
  metrics::CongestionSamples ring(absl::Seconds(30), 10, absl::Seconds(60));
  for (int i = 0; i < 1000; ++i) ring.Offer(At(kT0 + absl::Seconds(30 * i), i));
  EXPECT_EQ(ring.size(), 10u);
  metrics::CongestionWindow w = ring.WindowTo(At(kT0 + absl::Seconds(30 * 1000), 0));
  EXPECT_EQ(w.sampled_for, absl::Seconds(30 * 10));
}

TEST(LinkFlapHistory, CountsCarrierChangesWithinTheWindowFromTheFirstReadingOn) {
  metrics::LinkFlapHistory h(absl::Hours(6), 64);
  h.Observe("eth0", 10, kT0);  // changes from before the agent watched: no time
  auto f = h.Flaps(kT0);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].changes, 0u);
  EXPECT_FALSE(f[0].last_change.has_value());
  h.Observe("eth0", 12, kT0 + absl::Hours(1));  // down and up: 2 changes
  h.Observe("eth0", 12, kT0 + absl::Hours(1) + absl::Seconds(1));
  h.Observe("eth0", 14, kT0 + absl::Hours(2));
  f = h.Flaps(kT0 + absl::Hours(2));
  EXPECT_EQ(f[0].changes, 4u);
  EXPECT_EQ(f[0].last_change, kT0 + absl::Hours(2));
  EXPECT_EQ(f[0].carrier_changes, 14u);
  EXPECT_EQ(f[0].watched_since, kT0);
  f = h.Flaps(kT0 + absl::Hours(7) + absl::Minutes(30));  // the first two are 6.5 h old
  EXPECT_EQ(f[0].changes, 2u);
  f = h.Flaps(kT0 + absl::Hours(8) + absl::Seconds(1));
  EXPECT_EQ(f[0].changes, 0u);
  EXPECT_EQ(f[0].last_change, kT0 + absl::Hours(2)) << "the last flap stays known";
}

TEST(LinkFlapHistory, IsBoundedAndForgetsNetdevsThatAreGone) {
  metrics::LinkFlapHistory h(absl::Hours(6), 64);
  h.Observe("eth0", 0, kT0);
  h.Observe("eth1", 5, kT0);
  h.Observe("eth0", 1000000, kT0 + absl::Seconds(1));
  h.Observe("eth1", 2, kT0 + absl::Seconds(1));  // went down: re-created, a new baseline
  h.Observe("eth1", 3, kT0 + absl::Seconds(2));
  auto f = h.Flaps(kT0 + absl::Seconds(2));
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].changes, 64u);
  EXPECT_EQ(f[0].carrier_changes, 1000000u);
  EXPECT_EQ(f[1].changes, 1u);
  h.Retain({"eth1"});
  f = h.Flaps(kT0 + absl::Seconds(2));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].netdev, "eth1");
}

// mlx5 toggles the link on every pfc_en change: roced's own PFC write is two
// carrier changes that are not a flap of the cable.
TEST(LinkFlapHistory, RocedsOwnLinkTogglesAreKeptApartFromFlaps) {
  metrics::LinkFlapHistory h(absl::Hours(6), 64);
  h.NoteOwnToggle("eth1", kT0 - absl::Seconds(1));  // no reading of eth1 yet: nothing to report
  EXPECT_TRUE(h.Flaps(kT0).empty());
  h.Retain({"eth0"});
  h.Observe("eth0", 10, kT0);
  h.NoteOwnToggle("eth0", kT0 + absl::Seconds(10));
  h.Observe("eth0", 12, kT0 + absl::Seconds(12));  // the toggle's down and up
  auto f = h.Flaps(kT0 + absl::Seconds(12));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].changes, 0u);
  EXPECT_EQ(f[0].own_changes, 2u);
  EXPECT_FALSE(f[0].last_change.has_value());
  // A toggle explains two changes at most: a third in the same reading is a flap.
  h.NoteOwnToggle("eth0", kT0 + absl::Seconds(20));
  h.Observe("eth0", 15, kT0 + absl::Seconds(21));
  f = h.Flaps(kT0 + absl::Seconds(21));
  EXPECT_EQ(f[0].changes, 1u);
  EXPECT_EQ(f[0].own_changes, 4u);
  // Past the grace a noted toggle explains nothing (it did not happen).
  h.NoteOwnToggle("eth0", kT0 + absl::Seconds(30));
  h.Observe("eth0", 17, kT0 + absl::Seconds(30) + metrics::LinkFlapHistory::kOwnToggleGrace + absl::Seconds(1));
  f = h.Flaps(kT0 + absl::Minutes(1));
  EXPECT_EQ(f[0].changes, 3u);
  EXPECT_EQ(f[0].own_changes, 4u);
  // A toggle noted after the change it would explain explains nothing.
  h.Observe("eth0", 19, kT0 + absl::Minutes(2));
  h.NoteOwnToggle("eth0", kT0 + absl::Minutes(2) + absl::Seconds(1));
  h.Observe("eth0", 19, kT0 + absl::Minutes(2) + absl::Seconds(2));
  f = h.Flaps(kT0 + absl::Minutes(3));
  EXPECT_EQ(f[0].changes, 5u);
}

roced::v1::ProbeResult Latency(const std::string& peer, double p50) {
  roced::v1::ProbeResult r;
  r.set_peer(peer);
  r.set_device("mlx5_0");
  r.set_kind(roced::v1::PROBE_KIND_LATENCY);
  r.set_size(8);
  r.set_success(true);
  r.mutable_latency()->set_p50_us(p50);
  r.mutable_latency()->set_p99_us(p50 * 3);
  return r;
}

// A state directory of the test's own, removed afterwards.
class ProbeBaselineFile : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove_all(dir_); }
  const std::string dir_ = test_util::MakeTempDir("roced-baseline");
  const std::string path = dir_ + "/probe-baselines.json";
};

const probe::DeviceVersion kFwA{"mlx5_core", "kernel 6.1.0", "22.31.1014"};
const probe::DeviceVersion kFwB{"mlx5_core", "kernel 6.1.0", "22.36.1010"};

TEST(ProbeBaselineStore, ANewVersionMovesTheFiguresToPrevious) {
  probe::ProbeBaselineStore store("");
  for (int i = 0; i < 10; ++i) store.Add(Latency("node2", 2.0 + i), kFwA, kT0 + absl::Minutes(i));
  roced::v1::ProbeResult failed = Latency("node2", 50);
  failed.set_success(false);
  store.Add(failed, kFwA, kT0 + absl::Minutes(10));
  store.Add(Latency("node2", 3.0), kFwB, kT0 + absl::Minutes(11));
  roced::v1::ProbeBaselines b = store.Snapshot();
  ASSERT_EQ(b.baselines_size(), 1);
  const auto& prev = b.baselines(0).previous();
  EXPECT_EQ(prev.fw_version(), "22.31.1014");
  ASSERT_EQ(prev.p50_us_size(), 8) << "the newest 8 kept";
  EXPECT_EQ(prev.p50_us(0), 4.0);
  EXPECT_EQ(probe::Median(prev.p50_us()), 7.5);
  EXPECT_EQ(b.baselines(0).current().fw_version(), "22.36.1010");
  EXPECT_EQ(b.baselines(0).current().p50_us_size(), 1);
  EXPECT_EQ(b.baselines(0).current().driver_version(), "kernel 6.1.0");
}

TEST_F(ProbeBaselineFile, SurvivesARestartThroughTheStateDirectory) {
  {
    probe::ProbeBaselineStore store(path);
    store.Load();  // absent: nothing, no error
    store.Add(Latency("node2", 2.0), kFwA, kT0);
    ASSERT_TRUE(store.SaveIfDue(kT0).ok());
    store.Add(Latency("node2", 2.1), kFwA, kT0 + absl::Minutes(1));
    ASSERT_TRUE(store.SaveIfDue(kT0 + absl::Minutes(1)).ok());  // figures only: not yet due
    probe::ProbeBaselineStore early(path);
    early.Load();
    EXPECT_EQ(early.Snapshot().baselines(0).current().p50_us_size(), 1);
    store.Add(Latency("node2", 2.6), kFwB, kT0 + absl::Minutes(2));
    ASSERT_TRUE(store.SaveIfDue(kT0 + absl::Minutes(2)).ok());  // a version change: at once
  }
  probe::ProbeBaselineStore restarted(path);
  restarted.Load();
  roced::v1::ProbeBaselines b = restarted.Snapshot();
  ASSERT_EQ(b.baselines_size(), 1);
  EXPECT_EQ(b.baselines(0).previous().p50_us_size(), 2);
  EXPECT_EQ(b.baselines(0).previous().fw_version(), "22.31.1014");
  EXPECT_EQ(b.baselines(0).current().p50_us(0), 2.6);
}

TEST_F(ProbeBaselineFile, TheFileStaysBoundedWithManyPeers) {
  probe::ProbeBaselineStore store(path);
  for (int peer = 0; peer < 1000; ++peer) {
    for (int i = 0; i < 20; ++i) {
      store.Add(Latency("node" + std::to_string(peer), 2.0 + i), i < 10 ? kFwA : kFwB,
                kT0 + absl::Minutes(peer * 20 + i));
    }
  }
  ASSERT_TRUE(store.Save().ok());
  roced::v1::ProbeBaselines b = store.Snapshot();
  ASSERT_EQ(b.baselines_size(), static_cast<int>(probe::ProbeBaselineStore::kMaxBaselines));
  EXPECT_EQ(b.baselines(0).peer(), "node744") << "the peers probed longest ago made room";
  const auto size = std::filesystem::file_size(path);
  EXPECT_LT(size, probe::ProbeBaselineStore::kMaxBaselines * 1024) << size;  // 131 KiB measured
}

TEST_F(ProbeBaselineFile, ACorruptFileIsIgnoredWithALogLineAndReplaced) {
  ASSERT_TRUE(util::WriteFileAtomic(path, "{\"baselines\": [{\"peer\": ").ok());
  probe::ProbeBaselineStore store(path);
  ::testing::internal::CaptureStderr();
  store.Load();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("probe baselines " + path + " ignored"));
  EXPECT_EQ(store.Snapshot().baselines_size(), 0);
  store.Add(Latency("node2", 2.0), kFwA, kT0);
  ASSERT_TRUE(store.Save().ok());
  probe::ProbeBaselineStore again(path);
  again.Load();
  EXPECT_EQ(again.Snapshot().baselines_size(), 1);
}

}  // namespace
}  // namespace roced

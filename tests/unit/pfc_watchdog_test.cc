// PfcWatchdog with a counter source the test drives and a clock it owns:
// no kernel on a build machine can make PFC pause counters climb (the lab's
// DCB test NIC does that, in the lab tests).
#include "metrics/pfc_watchdog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "util/clock.h"

namespace roced::metrics {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// One reading per netdev that the test edits (rx pause frames, pause
// duration, tx packets by priority, the port's storm counters); a netdev
// can be made to fail. Counts reads, per netdev too.
class FakeCounterSourceForTest : public PauseCounterSource {
 public:
  void Set(const std::string& netdev, uint32_t priority, uint64_t value) {
    std::lock_guard<std::mutex> lock(mu_);
    readings_[netdev].priorities[priority].rx_pause = value;
  }
  void Add(const std::string& netdev, uint32_t priority, uint64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    readings_[netdev].priorities[priority].rx_pause += n;
  }
  // tx_prio<N>_packets (created at 0 by the first call).
  void AddTx(const std::string& netdev, uint32_t priority, uint64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    std::optional<uint64_t>& v = readings_[netdev].priorities[priority].tx_packets;
    v = v.value_or(0) + n;
  }
  // rx_prio<N>_pause_duration, microseconds (created at 0 by the first call).
  void AddDuration(const std::string& netdev, uint32_t priority, uint64_t us) {
    std::lock_guard<std::mutex> lock(mu_);
    std::optional<uint64_t>& v = readings_[netdev].priorities[priority].rx_pause_duration_us;
    v = v.value_or(0) + us;
  }
  void SetDuration(const std::string& netdev, uint32_t priority, uint64_t us) {
    std::lock_guard<std::mutex> lock(mu_);
    readings_[netdev].priorities[priority].rx_pause_duration_us = us;
  }
  void SetTx(const std::string& netdev, uint32_t priority, uint64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    readings_[netdev].priorities[priority].tx_packets = n;
  }
  // tx_pause_storm_error_events (created at 0 by the first call).
  void AddStormErrors(const std::string& netdev, uint64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    readings_[netdev].storm_errors = readings_[netdev].storm_errors.value_or(0) + n;
  }
  void Remove(const std::string& netdev, uint32_t priority) {
    std::lock_guard<std::mutex> lock(mu_);
    readings_[netdev].priorities.erase(priority);
  }
  void Fail(const std::string& netdev, bool fail) {
    std::lock_guard<std::mutex> lock(mu_);
    failing_[netdev] = fail;
  }
  absl::StatusOr<PauseReading> Read(const std::string& netdev) override {
    reads.fetch_add(1);
    std::lock_guard<std::mutex> lock(mu_);
    ++reads_of_[netdev];
    if (failing_[netdev]) return absl::UnavailableError("ethtool read failed");
    return readings_[netdev];
  }
  int ReadsOf(const std::string& netdev) {
    std::lock_guard<std::mutex> lock(mu_);
    return reads_of_[netdev];
  }

 private:
  std::mutex mu_;
  std::map<std::string, PauseReading> readings_;
  std::map<std::string, bool> failing_;
  std::map<std::string, int> reads_of_;

 public:
  std::atomic<int> reads{0};
};

class PfcWatchdogTest : public ::testing::Test {
 protected:
  PfcWatchdogTest()
      : watchdog_(&source_, PfcWatchdogOptions(),
                  [this](const PfcStormTransition& t) { changes_.push_back(t); }) {
    watchdog_.SetNetdevsAllPriorities({"eth0"});
    source_.Set("eth0", 3, 1000);
    source_.Set("eth0", 4, 0);
  }

  // Polls at t = 0, 100 ms, 200 ms, ... (the default poll interval); before
  // the poll `pauses_before` pause frames are added on eth0 priority 3.
  void Poll(uint64_t pauses_before) {
    if (pauses_before > 0) source_.Add("eth0", 3, pauses_before);
    watchdog_.PollOnce(t0_ + absl::Milliseconds(100) * polls_++);
  }
  // The same, with eth0 priority 3's tx_prio3_packets raised by `tx`
  // (created by the first call) and its pause duration by `paused_us`
  // (created when non-zero).
  void PollTx(uint64_t pauses_before, uint64_t tx, uint64_t paused_us = 0) {
    source_.AddTx("eth0", 3, tx);
    if (paused_us > 0) source_.AddDuration("eth0", 3, paused_us);
    Poll(pauses_before);
  }
  // Milliseconds since t0 of the last poll.
  int64_t LastPollMs() const { return 100 * (polls_ - 1); }
  // The poll (ms since t0) at which eth0 priority 3 was first stormed, -1.
  int64_t StormedAtMs(int polls, const std::function<void()>& poll) {
    for (int i = 0; i < polls; ++i) {
      poll();
      if (Stormed()) return LastPollMs();
    }
    return -1;
  }
  bool Stormed(uint32_t priority = 3) const {
    for (const auto& s : watchdog_.Status()) {
      if (s.netdev == "eth0" && s.priority == priority) return s.stormed;
    }
    return false;
  }

  FakeCounterSourceForTest source_;
  std::vector<PfcStormTransition> changes_;
  PfcWatchdog watchdog_;
  const absl::Time t0_ = absl::FromUnixSeconds(1000);
  int polls_ = 0;
};

TEST_F(PfcWatchdogTest, PriorityPausedInEveryPollForTheDetectionTimeIsStormed) {
  Poll(0);  // t=0: baseline
  Poll(50);  // t=100: pausing since t=0 for 100 ms
  EXPECT_FALSE(Stormed());
  EXPECT_THAT(changes_, IsEmpty());
  Poll(50);  // t=200: 200 ms of continuous pausing
  EXPECT_TRUE(Stormed());
  ASSERT_EQ(changes_.size(), 1u);
  EXPECT_EQ(changes_[0].netdev, "eth0");
  EXPECT_EQ(changes_[0].priority, 3u);
  EXPECT_TRUE(changes_[0].stormed);
  EXPECT_EQ(changes_[0].rx_pause_frames, 1100u);
  EXPECT_EQ(changes_[0].window_pause_frames, 100u);
  EXPECT_EQ(changes_[0].window, absl::Milliseconds(200));
  // Neither tx_prio3_packets nor rx_prio3_pause_duration: SONiC's rule,
  // and the transition says so.
  EXPECT_EQ(changes_[0].rule, PfcStormRule::kPausesOnly);
  EXPECT_THAT(changes_[0].why, HasSubstr("pauses alone judged"));
  EXPECT_FALSE(changes_[0].window_tx_packets.has_value());
  EXPECT_FALSE(Stormed(4));
}

TEST_F(PfcWatchdogTest, APollWithoutPausesRestartsDetection) {
  Poll(0);
  Poll(10);  // t=100
  Poll(0);   // t=200: quiet, the run is broken
  Poll(10);  // t=300: pausing since 200
  EXPECT_FALSE(Stormed());
  Poll(10);  // t=400: 200 ms again
  EXPECT_TRUE(Stormed());
  EXPECT_EQ(changes_.size(), 1u);
}

TEST_F(PfcWatchdogTest, TheFirstPollOnlyTakesABaseline) {
  // 1000 frames counted before the watchdog looked: not a storm.
  Poll(0);
  Poll(0);
  Poll(0);
  EXPECT_FALSE(Stormed());
  EXPECT_THAT(changes_, IsEmpty());
}

TEST_F(PfcWatchdogTest, StormIsRestoredAfterTheRestorationTimeWithoutPauses) {
  Poll(0);
  Poll(1);
  Poll(1);  // t=200: stormed
  ASSERT_TRUE(Stormed());
  Poll(1);  // t=300: still pausing
  Poll(0);  // t=400: quiet since 300
  Poll(0);  // t=500
  Poll(0);  // t=600
  EXPECT_TRUE(Stormed());  // 300 ms quiet < 400 ms
  Poll(0);  // t=700: 400 ms quiet
  EXPECT_FALSE(Stormed());
  ASSERT_EQ(changes_.size(), 2u);
  EXPECT_FALSE(changes_[1].stormed);
  EXPECT_EQ(changes_[1].window, absl::Milliseconds(400));
  EXPECT_EQ(changes_[1].window_pause_frames, 0u);
  EXPECT_TRUE(changes_[1].reason.empty());
}

TEST_F(PfcWatchdogTest, PausesDuringRestorationRestartTheQuietTime) {
  Poll(0);
  Poll(1);
  Poll(1);  // t=200: stormed
  Poll(0);  // t=300: quiet since 200
  Poll(0);
  Poll(0);  // t=500
  Poll(1);  // t=600: pauses again
  Poll(0);  // t=700: quiet since 600
  Poll(0);
  Poll(0);  // t=900: 300 ms
  EXPECT_TRUE(Stormed());
  Poll(0);  // t=1000
  EXPECT_FALSE(Stormed());
}

TEST_F(PfcWatchdogTest, StormEventsCountEachDetectionAndMetricsShowTheState) {
  Poll(0);
  Poll(1);
  Poll(1);  // storm 1
  for (int i = 0; i < 4; ++i) Poll(0);  // restored
  Poll(1);
  Poll(1);  // storm 2
  std::map<std::string, double> storm, events;
  for (const auto& f : watchdog_.Collect()) {
    for (const auto& m : f.metric) {
      std::string key = m.label[0].value + "/" + m.label[1].value;
      ASSERT_EQ(m.label[0].name, "netdev");
      ASSERT_EQ(m.label[1].name, "priority");
      if (f.name == "roced_pfc_storm") storm[key] = m.gauge.value;
      if (f.name == "roced_pfc_storm_events_total") events[key] = m.counter.value;
    }
  }
  EXPECT_EQ(storm["eth0/3"], 1);
  EXPECT_EQ(storm["eth0/4"], 0);
  EXPECT_EQ(events["eth0/3"], 2);
  EXPECT_EQ(events["eth0/4"], 0);
  EXPECT_EQ(changes_.size(), 3u);
}

TEST_F(PfcWatchdogTest, PrioritiesAndNetdevsAreWatchedIndependently) {
  watchdog_.SetNetdevsAllPriorities({"eth0", "eth1"});
  source_.Set("eth1", 3, 0);
  Poll(0);
  for (int i = 0; i < 5; ++i) {
    source_.Add("eth0", 4, 1);
    Poll(0);
  }
  EXPECT_TRUE(Stormed(4));
  EXPECT_FALSE(Stormed(3));
  for (const auto& s : watchdog_.Status()) {
    if (s.netdev == "eth1") {
      EXPECT_FALSE(s.stormed);
    }
  }
}

TEST_F(PfcWatchdogTest, AFailedReadSkipsThePollWithoutChangingState) {
  Poll(0);
  Poll(1);  // t=100
  source_.Fail("eth0", true);
  Poll(1);  // t=200: unread
  EXPECT_FALSE(Stormed());
  source_.Fail("eth0", false);
  Poll(1);  // t=300: 2 frames since t=100, pausing since 0
  EXPECT_TRUE(Stormed());
}

TEST_F(PfcWatchdogTest, ACounterThatWentBackwardsIsAResetNotAStorm) {
  Poll(0);
  source_.Set("eth0", 3, 0);  // driver reload
  Poll(0);
  Poll(0);
  Poll(0);
  EXPECT_FALSE(Stormed());
}

TEST_F(PfcWatchdogTest, UnwatchedNetdevEndsItsStormAndDropsItsSeries) {
  Poll(0);
  Poll(1);
  Poll(1);
  ASSERT_TRUE(Stormed());
  watchdog_.SetNetdevsAllPriorities({});
  ASSERT_EQ(changes_.size(), 2u);
  EXPECT_FALSE(changes_[1].stormed);
  EXPECT_EQ(changes_[1].reason, "netdev no longer watched");
  EXPECT_THAT(watchdog_.Status(), IsEmpty());
  EXPECT_THAT(watchdog_.Collect(), IsEmpty());
}

TEST_F(PfcWatchdogTest, PriorityTheDriverStopsCountingEndsItsStorm) {
  Poll(0);
  Poll(1);
  Poll(1);
  ASSERT_TRUE(Stormed());
  source_.Remove("eth0", 3);  // PFC disabled on 3: mlx5 drops rx_prio3_pause
  Poll(0);
  ASSERT_EQ(changes_.size(), 2u);
  EXPECT_EQ(changes_[1].reason, "priority no longer counted");
  std::vector<uint32_t> left;
  for (const auto& s : watchdog_.Status()) left.push_back(s.priority);
  EXPECT_THAT(left, ElementsAre(4u));
}

TEST_F(PfcWatchdogTest, OnlyPfcEnabledPrioritiesAreWatched) {
  watchdog_.SetNetdevs({{"eth0", 1u << 4}});
  source_.Set("eth0", 5, 0);
  Poll(0);
  for (int i = 0; i < 5; ++i) Poll(10);  // priority 3 pausing, but PFC is off on it
  EXPECT_FALSE(Stormed(3));
  std::vector<uint32_t> watched;
  for (const auto& s : watchdog_.Status()) watched.push_back(s.priority);
  EXPECT_THAT(watched, ElementsAre(4u));  // not 3, not 5
  EXPECT_THAT(changes_, IsEmpty());
}

TEST_F(PfcWatchdogTest, PfcTurnedOffOnAStormedPriorityEndsItsStorm) {
  Poll(0);
  Poll(1);
  Poll(1);
  ASSERT_TRUE(Stormed());
  watchdog_.SetNetdevs({{"eth0", 1u << 4}});
  Poll(1);
  ASSERT_EQ(changes_.size(), 2u);
  EXPECT_FALSE(changes_[1].stormed);
  EXPECT_EQ(changes_[1].reason, "PFC no longer enabled on the priority");
}

TEST_F(PfcWatchdogTest, ANetdevListedTwiceIsWatchedOnTheUnionAndOneWithoutPrioritiesNotAtAll) {
  watchdog_.SetNetdevs({{"eth1", 0}, {"eth0", 1u << 3}, {"eth0", 1u << 4}});
  std::vector<WatchedNetdev> w = watchdog_.Watched();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].netdev, "eth0");
  EXPECT_EQ(w[0].priorities, (1u << 3) | (1u << 4));
}

TEST_F(PfcWatchdogTest, ConfiguredTimesReplaceTheDefaults) {
  roced::v1::PfcWatchdogConfig config;
  config.mutable_detection_time()->set_nanos(500000000);
  PfcWatchdogOptions o = PfcWatchdogOptions::FromConfig(config);
  EXPECT_EQ(o.detection_time, absl::Milliseconds(500));
  EXPECT_EQ(o.poll_interval, absl::Milliseconds(100));
  EXPECT_EQ(o.restoration_time, absl::Milliseconds(400));
  watchdog_.SetOptions(o);
  Poll(0);
  for (int i = 0; i < 4; ++i) Poll(1);  // t=400
  EXPECT_FALSE(Stormed());
  Poll(1);  // t=500
  EXPECT_TRUE(Stormed());
}

// --- judged on progress ---------------------------------------------------

// Incast congestion: the peer pauses priority 3 in every poll, yet the
// queue drains (tx_prio3_packets rises), even while paused 95% of the time.
TEST_F(PfcWatchdogTest, SteadyCongestionThatDrainsIsNotAStorm) {
  PollTx(0, 0);
  for (int i = 0; i < 30; ++i) PollTx(50, 100, 95000);  // 3 s
  EXPECT_FALSE(Stormed());
  EXPECT_THAT(changes_, IsEmpty());
}

// A stuck queue: paused in every poll, tx_prio3_packets flat. Stormed at
// the first poll the detection time after pausing began, not before.
TEST_F(PfcWatchdogTest, StuckQueueIsAStormWithinTheDetectionTime) {
  PollTx(0, 500);  // t=0: baseline, 500 packets sent before
  EXPECT_EQ(StormedAtMs(10, [this] { PollTx(50, 0); }), 200);
  ASSERT_EQ(changes_.size(), 1u);
  const PfcStormTransition& t = changes_[0];
  EXPECT_TRUE(t.stormed);
  EXPECT_EQ(t.rule, PfcStormRule::kNoTransmitProgress);
  EXPECT_THAT(t.why, HasSubstr("no transmit progress"));
  EXPECT_EQ(t.window, absl::Milliseconds(200));
  EXPECT_EQ(t.window_pause_frames, 100u);
  EXPECT_EQ(t.window_tx_packets, std::optional<uint64_t>(0));
}

// The lab's sequence: congestion that drains for a second, then the queue
// gets stuck. Stormed the detection time after the last poll that read
// transmit progress.
TEST_F(PfcWatchdogTest, DrainingQueueThatGetsStuckIsStormedDetectionTimeAfterItsLastProgress) {
  PollTx(0, 0);
  for (int i = 0; i < 10; ++i) PollTx(50, 100);  // t=100..1000, draining
  ASSERT_FALSE(Stormed());
  EXPECT_EQ(StormedAtMs(10, [this] { PollTx(50, 0); }), 1200);
}

// Storm restored by progress: the queue drains again while still paused
// (it became congestion): tx_prio3_packets rising in every poll for the
// restoration time.
TEST_F(PfcWatchdogTest, StormIsRestoredWhenTransmitProgressResumes) {
  PollTx(0, 0);
  PollTx(50, 0);
  PollTx(50, 0);  // t=200: stormed
  ASSERT_TRUE(Stormed());
  for (int i = 0; i < 3; ++i) PollTx(50, 100);  // t=300..500
  EXPECT_TRUE(Stormed());
  PollTx(50, 100);  // t=600: rising in every poll for 400 ms
  EXPECT_FALSE(Stormed());
  ASSERT_EQ(changes_.size(), 2u);
  EXPECT_EQ(changes_[1].rule, PfcStormRule::kTransmitProgress);
  EXPECT_THAT(changes_[1].why, HasSubstr("transmit progressing"));
  EXPECT_EQ(changes_[1].window_tx_packets, std::optional<uint64_t>(400));
}

// Without tx_prio<N>_packets, rx_prio<N>_pause_duration decides: paused
// 97% of the window is a storm ...
TEST_F(PfcWatchdogTest, PauseDurationOverNinetyPercentIsAStormWhereTxPacketsAreAbsent) {
  source_.SetDuration("eth0", 3, 0);
  Poll(0);
  EXPECT_EQ(StormedAtMs(10, [this] {
              source_.AddDuration("eth0", 3, 97000);  // 97 ms of each 100 ms
              Poll(50);
            }),
            200);
  ASSERT_EQ(changes_.size(), 1u);
  EXPECT_EQ(changes_[0].rule, PfcStormRule::kPauseDuration);
  EXPECT_THAT(changes_[0].why, HasSubstr("paused 97% of 200ms"));
  EXPECT_EQ(changes_[0].window_paused, std::optional<absl::Duration>(absl::Milliseconds(194)));
}

// ... paused 80% of it, with pause frames in every poll, is not.
TEST_F(PfcWatchdogTest, PauseDurationUnderNinetyPercentIsNotAStorm) {
  source_.SetDuration("eth0", 3, 0);
  Poll(0);
  EXPECT_EQ(StormedAtMs(30, [this] {
              source_.AddDuration("eth0", 3, 80000);
              Poll(50);
            }),
            -1);
  EXPECT_THAT(changes_, IsEmpty());
}

// The NIC's own storm counter (port-wide) storms at once the priorities
// that paused in that read, not the others.
TEST_F(PfcWatchdogTest, NicStormCounterStormsThePausingPrioritiesAtOnce) {
  source_.AddStormErrors("eth0", 0);
  PollTx(0, 0);
  PollTx(50, 100);  // t=100: draining congestion, not a storm by itself
  ASSERT_FALSE(Stormed());
  source_.AddStormErrors("eth0", 1);
  PollTx(50, 100);  // t=200
  EXPECT_TRUE(Stormed(3));
  EXPECT_FALSE(Stormed(4));  // no pause frames on 4
  ASSERT_EQ(changes_.size(), 1u);
  EXPECT_EQ(changes_[0].priority, 3u);
  EXPECT_EQ(changes_[0].rule, PfcStormRule::kNicStormCounter);
  EXPECT_THAT(changes_[0].why, HasSubstr("NIC storm counter"));
  EXPECT_EQ(changes_[0].storm_error_events, 1u);
  EXPECT_EQ(changes_[0].window, absl::Milliseconds(100));
}

// With no priority pausing in that read, every watched one is stormed:
// the counter does not say which.
TEST_F(PfcWatchdogTest, NicStormCounterWithNoPausingPriorityStormsEveryWatchedOne) {
  source_.AddStormErrors("eth0", 0);
  Poll(0);
  Poll(0);
  source_.AddStormErrors("eth0", 2);
  Poll(0);
  EXPECT_TRUE(Stormed(3));
  EXPECT_TRUE(Stormed(4));
  ASSERT_EQ(changes_.size(), 2u);
  EXPECT_THAT(changes_[0].why, HasSubstr("every watched one"));
  // Restored only by what is read after the storm was declared: 400 ms.
  for (int i = 0; i < 3; ++i) Poll(0);
  EXPECT_TRUE(Stormed(3));
  Poll(0);
  EXPECT_FALSE(Stormed(3));
  EXPECT_FALSE(Stormed(4));
}

// --- cost: one read per netdev and poll, fewer while quiet ------------------

// Quiet for a second: read once a second; a read showing pauses returns the
// netdev to the poll interval. A read after a backed-off wait opens a
// detection window but is not in one (its pauses may be one burst).
TEST_F(PfcWatchdogTest, BacksOffWhenQuietAndReturnsToThePollIntervalOnPauses) {
  for (int i = 0; i <= 10; ++i) Poll(0);  // t=0..1000: 11 reads, then backs off
  EXPECT_EQ(source_.ReadsOf("eth0"), 11);
  EXPECT_TRUE(watchdog_.BackedOff("eth0"));
  for (int i = 0; i < 20; ++i) Poll(0);  // t=1100..3000: due at 2000 and 3000
  EXPECT_EQ(source_.ReadsOf("eth0"), 13);
  source_.Add("eth0", 3, 50);
  for (int i = 0; i < 9; ++i) Poll(0);  // t=3100..3900: still backed off, unread
  EXPECT_EQ(source_.ReadsOf("eth0"), 13);
  Poll(50);  // t=4000: read, pauses: back to the poll interval, not stormed
  EXPECT_FALSE(watchdog_.BackedOff("eth0"));
  EXPECT_FALSE(Stormed());
  Poll(50);  // t=4100
  EXPECT_EQ(source_.ReadsOf("eth0"), 15);
  EXPECT_FALSE(Stormed());  // 100 ms of pausing at the poll interval
  Poll(50);  // t=4200: 200 ms
  EXPECT_TRUE(Stormed());
}

// Every read is one source read of the netdev (one ethtool -S), whatever
// the number of priorities and counters.
TEST(PfcWatchdogCostTest, EachPollReadsEachNetdevOnce) {
  struct Reader : hal::NetdevStatsReader {
    std::map<std::string, int> reads;
    absl::StatusOr<std::vector<hal::EthtoolStat>> ReadStats(const std::string& netdev) override {
      ++reads[netdev];
      std::vector<hal::EthtoolStat> out;
      for (int p = 0; p < 8; ++p) {
        out.push_back({"rx_prio" + std::to_string(p) + "_pause", 0});
        out.push_back({"tx_prio" + std::to_string(p) + "_packets", 0});
      }
      return out;
    }
  } reader;
  EthtoolPauseCounterSource source(&reader);
  PfcWatchdog watchdog(&source, PfcWatchdogOptions(), nullptr);
  watchdog.SetNetdevsAllPriorities({"eth0", "eth1"});
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  for (int i = 0; i < 5; ++i) watchdog.PollOnce(t0 + absl::Milliseconds(100) * i);
  EXPECT_EQ(reader.reads["eth0"], 5);
  EXPECT_EQ(reader.reads["eth1"], 5);
  EXPECT_EQ(watchdog.Status().size(), 16u);
}

TEST(PfcWatchdogCostTest, OneEthtoolReadGivesEveryCounterTheWatchdogJudges) {
  PauseReading r = PauseReadingOf({{"rx_prio3_pause", 7},
                                   {"rx_prio3_pause_duration", 2345},
                                   {"tx_prio3_pause", 4},
                                   {"tx_prio3_packets", 99},
                                   {"tx_prio3_bytes", 99000},
                                   {"tx_prio5_packets", 1},  // no rx_prio5_pause: not counted
                                   {"tx_prio12_packets", 1},
                                   {"tx_pause_storm_warning_events", 2},
                                   {"tx_pause_storm_error_events", 1}});
  ASSERT_EQ(r.priorities.size(), 1u);
  const PauseReading::Priority& p = r.priorities.at(3);
  EXPECT_EQ(p.rx_pause, 7u);
  EXPECT_EQ(p.rx_pause_duration_us, std::optional<uint64_t>(2345));
  EXPECT_EQ(p.tx_pause, std::optional<uint64_t>(4));
  EXPECT_EQ(p.tx_packets, std::optional<uint64_t>(99));
  EXPECT_EQ(r.storm_errors, std::optional<uint64_t>(1));
  EXPECT_EQ(r.storm_warnings, std::optional<uint64_t>(2));
}

// --- counters going backwards ----------------------------------------------

// Only the pause duration was reset (its counter went backwards while the
// pause frames kept rising): a new baseline, not a window without the
// counter (that would fall back to the pauses alone and storm).
TEST_F(PfcWatchdogTest, PauseDurationGoingBackwardsIsANewBaselineNotAStorm) {
  source_.SetDuration("eth0", 3, 1000000000);
  Poll(0);
  for (int i = 0; i < 5; ++i) {
    source_.AddDuration("eth0", 3, 10000);  // 10%
    Poll(50);
  }
  source_.SetDuration("eth0", 3, 0);  // driver reload
  for (int i = 0; i < 10; ++i) {
    source_.AddDuration("eth0", 3, 10000);
    Poll(50);
  }
  EXPECT_FALSE(Stormed());
  EXPECT_THAT(changes_, IsEmpty());
}

// tx_prio3_packets reset (driver reload) in draining congestion: lower
// than before is not "no progress"; the queue keeps draining.
TEST_F(PfcWatchdogTest, TxPacketsGoingBackwardsInDrainingCongestionIsNotAStorm) {
  PollTx(0, 0);
  for (int i = 0; i < 5; ++i) PollTx(50, 100);  // t=100..500: tx 500
  source_.SetTx("eth0", 3, 0);
  for (int i = 0; i < 10; ++i) PollTx(50, 20);  // t=600..1500: reset, draining again
  EXPECT_FALSE(Stormed());
  EXPECT_THAT(changes_, IsEmpty());
}

// tx_prio3_packets reset while the queue is stuck: neither progress nor
// part of a window; the storm is judged from the reset on.
TEST_F(PfcWatchdogTest, TxPacketsGoingBackwardsIsANewBaselineNotProgress) {
  PollTx(0, 5000);
  PollTx(50, 0);  // t=100
  source_.SetTx("eth0", 3, 10);  // driver reload
  Poll(50);  // t=200: baseline again
  EXPECT_FALSE(Stormed());
  EXPECT_EQ(StormedAtMs(10, [this] { Poll(50); }), 400);
}

// The polling thread on a simulated clock: each Tick moves it 5 ms (one
// poll interval) and returns once the poll it woke has run and the thread,
// the clock's one waiter, waits again.
TEST(PfcWatchdogThreadTest, PollingThreadDetectsAndRestoresOnItsClock) {
  FakeCounterSourceForTest source;
  source.Set("eth0", 3, 0);
  util::SimulatedClock clock;
  std::atomic<int> stormed{0}, restored{0};
  PfcWatchdogOptions o;
  o.poll_interval = absl::Milliseconds(5);
  o.detection_time = absl::Milliseconds(20);
  o.restoration_time = absl::Milliseconds(20);
  PfcWatchdog watchdog(&source, o, [&](const PfcStormTransition& t) {
    (t.stormed ? stormed : restored).fetch_add(1);
  }, &clock);
  watchdog.SetNetdevsAllPriorities({"eth0"});
  watchdog.Start();
  ASSERT_TRUE(clock.AwaitWaiters(1));
  // A pause frame between every two polls: a storm once 20 ms are covered.
  int ticks = 0;
  for (; stormed.load() == 0 && ticks < 20; ++ticks) {
    source.Add("eth0", 3, 1);
    ASSERT_TRUE(clock.Tick(absl::Milliseconds(5), 1));
  }
  EXPECT_EQ(stormed.load(), 1);
  EXPECT_GE(ticks, 4) << "stormed before the 20 ms detection time";
  EXPECT_LE(ticks, 6) << "the storm took " << ticks * 5 << " ms to see";
  // Quiet: restored once 20 ms pass without a pause frame (the thread may
  // back off towards its idle interval, 1 s, meanwhile).
  for (ticks = 0; restored.load() == 0 && ticks < 400; ++ticks) ASSERT_TRUE(clock.Tick(absl::Milliseconds(5), 1));
  EXPECT_EQ(restored.load(), 1);
  EXPECT_EQ(stormed.load(), 1);
  watchdog.Stop();
  watchdog.Stop();  // idempotent
}

// A node with nothing that can storm costs no polls: the thread waits
// until it is given a netdev, however long, then polls at once.
TEST(PfcWatchdogThreadTest, NothingToWatchMeansNoPollsUntilSomethingIs) {
  FakeCounterSourceForTest source;
  source.Set("eth0", 3, 0);
  util::SimulatedClock clock;
  PfcWatchdogOptions o;
  o.poll_interval = absl::Milliseconds(5);
  PfcWatchdog watchdog(&source, o, nullptr, &clock);
  watchdog.Start();
  ASSERT_TRUE(clock.AwaitWaiters(1));
  EXPECT_EQ(clock.Advance(absl::Hours(24)), 0u) << "an idle watchdog's wait has no deadline";
  EXPECT_EQ(source.reads.load(), 0);
  watchdog.SetNetdevs({{"eth0", 1u << 3}});
  // The trigger polls at once (no clock step); the 1 ms polls watch for it.
  for (int i = 0; i < 10000 && source.reads.load() < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a poll of `reads`, not a wait for time
  }
  ASSERT_EQ(source.reads.load(), 1);
  ASSERT_TRUE(clock.AwaitWaiters(1));
  ASSERT_TRUE(clock.Tick(absl::Milliseconds(5), 1));
  ASSERT_TRUE(clock.Tick(absl::Milliseconds(5), 1));
  EXPECT_EQ(source.reads.load(), 3);
  watchdog.SetNetdevs({});
  // Back to a wait without a deadline once the trigger's pass is done.
  for (int i = 0; i < 10000 && clock.Advance(absl::Hours(1)) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a poll of the thread's wait, not of time
  }
  const int after = source.reads.load();
  EXPECT_EQ(clock.Advance(absl::Hours(24)), 0u);
  EXPECT_EQ(source.reads.load(), after);
  watchdog.Stop();
}

}  // namespace
}  // namespace roced::metrics

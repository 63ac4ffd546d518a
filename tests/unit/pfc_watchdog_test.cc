// PfcWatchdog with a counter source the test drives and a clock it owns:
// no kernel on a build machine can make PFC pause counters climb (the lab's
// DCB test NIC does that, in the lab tests).
#include "metrics/pfc_watchdog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>


namespace roced::metrics {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Cumulative rx pause counts per (netdev, priority) that the test sets;
// a netdev can be made to fail.
class FakeCounterSourceForTest : public PauseCounterSource {
 public:
  void Set(const std::string& netdev, uint32_t priority, uint64_t value) {
    std::lock_guard<std::mutex> lock(mu_);
    counts_[netdev][priority] = value;
  }
  void Add(const std::string& netdev, uint32_t priority, uint64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    counts_[netdev][priority] += n;
  }
  void Remove(const std::string& netdev, uint32_t priority) {
    std::lock_guard<std::mutex> lock(mu_);
    counts_[netdev].erase(priority);
  }
  void Fail(const std::string& netdev, bool fail) {
    std::lock_guard<std::mutex> lock(mu_);
    failing_[netdev] = fail;
  }
  absl::StatusOr<std::map<uint32_t, uint64_t>> RxPauseFrames(const std::string& netdev) override {
    reads.fetch_add(1);
    std::lock_guard<std::mutex> lock(mu_);
    if (failing_[netdev]) return absl::UnavailableError("ethtool read failed");
    return counts_[netdev];
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::map<uint32_t, uint64_t>> counts_;
  std::map<std::string, bool> failing_;

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

TEST(PfcWatchdogThreadTest, PollingThreadDetectsAndRestoresOnTheRealClock) {
  FakeCounterSourceForTest source;
  source.Set("eth0", 3, 0);
  std::atomic<int> stormed{0}, restored{0};
  PfcWatchdogOptions o;
  o.poll_interval = absl::Milliseconds(5);
  o.detection_time = absl::Milliseconds(20);
  o.restoration_time = absl::Milliseconds(20);
  PfcWatchdog watchdog(&source, o, [&](const PfcStormTransition& t) {
    (t.stormed ? stormed : restored).fetch_add(1);
  });
  watchdog.SetNetdevsAllPriorities({"eth0"});
  watchdog.Start();
  // A pause frame faster than the watchdog polls, until it sees the storm.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (stormed.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    source.Add("eth0", 3, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(stormed.load(), 1);
  while (restored.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(restored.load(), 1);
  watchdog.Stop();
  watchdog.Stop();  // idempotent
}

// A node with nothing that can storm costs no polls: the thread sleeps until
// it is given a netdev, then polls at once.
TEST(PfcWatchdogThreadTest, NothingToWatchMeansNoPollsUntilSomethingIs) {
  FakeCounterSourceForTest source;
  source.Set("eth0", 3, 0);
  PfcWatchdogOptions o;
  o.poll_interval = absl::Milliseconds(5);
  PfcWatchdog watchdog(&source, o, nullptr);
  watchdog.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(source.reads.load(), 0);
  watchdog.SetNetdevs({{"eth0", 1u << 3}});
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (source.reads.load() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE(source.reads.load(), 3);
  watchdog.SetNetdevs({});
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a poll in flight ends
  const int after = source.reads.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(source.reads.load(), after);
  watchdog.Stop();
}

}  // namespace
}  // namespace roced::metrics

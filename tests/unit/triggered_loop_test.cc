// util::TriggeredLoop: periodic passes on its wait, triggered passes at
// once with their reason, merged triggers, a prompt Stop, a named thread.
#include "util/triggered_loop.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <pthread.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "absl/time/clock.h"

namespace roced::util {
namespace {

struct Recorder {
  std::mutex mu;
  std::vector<std::string> reasons;
  std::string thread_name;
  void Add(const std::string& r) {
    char name[16] = {};
    pthread_getname_np(pthread_self(), name, sizeof(name));
    std::lock_guard<std::mutex> lock(mu);
    reasons.push_back(r);
    thread_name = name;
  }
  std::vector<std::string> Get() {
    std::lock_guard<std::mutex> lock(mu);
    return reasons;
  }
};

bool WaitFor(const std::function<bool()>& cond, absl::Duration timeout = absl::Seconds(5)) {
  const absl::Time end = absl::Now() + timeout;
  while (absl::Now() < end) {
    if (cond()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return cond();
}

TEST(TriggeredLoop, RunsPeriodicallyOnItsWait) {
  Recorder rec;
  TriggeredLoop loop({"test-loop"}, [] { return absl::Milliseconds(20); },
                     [&](const std::string& r) { rec.Add(r); });
  loop.Start();
  EXPECT_TRUE(WaitFor([&] { return rec.Get().size() >= 3; }));
  loop.Stop();
  for (const auto& r : rec.Get()) EXPECT_EQ(r, "periodic");
  EXPECT_EQ(rec.thread_name, "test-loop");
}

TEST(TriggeredLoop, ATriggerRunsAtOnceWithItsReasonAndStopIsPrompt) {
  Recorder rec;
  TriggeredLoop loop({"t", "periodic", /*run_first=*/true}, [] { return absl::Hours(1); },
                     [&](const std::string& r) { rec.Add(r); });
  loop.Start();
  EXPECT_TRUE(WaitFor([&] { return rec.Get().size() == 1; }));
  EXPECT_EQ(rec.Get()[0], "start");
  loop.Trigger("netlink");
  EXPECT_TRUE(WaitFor([&] { return rec.Get().size() == 2; }));
  EXPECT_EQ(rec.Get()[1], "netlink");
  const absl::Time t0 = absl::Now();
  loop.Stop();
  EXPECT_LT(absl::Now() - t0, absl::Seconds(1));  // not the hour's wait
  loop.Stop();  // idempotent
  EXPECT_EQ(rec.Get().size(), 2u);
}

TEST(TriggeredLoop, TriggersDuringABodyAreMergedIntoOneNextPass) {
  Recorder rec;
  std::atomic<bool> release{false};
  TriggeredLoop loop({"t"}, [] { return absl::Hours(1); }, [&](const std::string& r) {
    rec.Add(r);
    if (r == "first") {
      while (!release.load()) absl::SleepFor(absl::Milliseconds(1));
    }
  });
  loop.Start();
  loop.Trigger("first");
  EXPECT_TRUE(WaitFor([&] { return rec.Get().size() == 1; }));
  loop.Trigger("a");
  loop.Trigger("b");
  release = true;
  EXPECT_TRUE(WaitFor([&] { return rec.Get().size() == 2; }));
  absl::SleepFor(absl::Milliseconds(50));
  loop.Stop();
  EXPECT_THAT(rec.Get(), ::testing::ElementsAre("first", "b"));
}

// An infinite wait (a loop with nothing periodic to do: the PFC watchdog
// with no PFC-enabled netdev) sleeps until triggered: no pass, no spin.
TEST(TriggeredLoop, AnInfiniteWaitRunsOnlyOnTriggers) {
  Recorder rec;
  std::atomic<int> waits{0};
  TriggeredLoop loop({"t"}, [&] {
    ++waits;
    return absl::InfiniteDuration();
  }, [&](const std::string& r) { rec.Add(r); });
  loop.Start();
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_TRUE(rec.Get().empty());
  EXPECT_EQ(waits.load(), 1) << "the loop woke up without a trigger";
  loop.Trigger("go");
  EXPECT_TRUE(WaitFor([&] { return rec.Get().size() == 1; }));
  EXPECT_EQ(rec.Get()[0], "go");
  const absl::Time t0 = absl::Now();
  loop.Stop();
  EXPECT_LT(absl::Now() - t0, absl::Seconds(1));
}

}  // namespace
}  // namespace roced::util

// util::TriggeredLoop: periodic passes on its wait, triggered passes at
// once with their reason, merged triggers, a prompt Stop, a named thread.
// Time is a SimulatedClock: a periodic pass happens when the test moves the
// clock past the wait, and not before.
#include "util/triggered_loop.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "absl/time/clock.h"
#include "util/clock.h"

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

// Polls `cond` (it is set on the loop's thread; a 1 ms poll, not a wait
// for time to pass) until it holds, at most 10 s of real time.
bool WaitFor(const std::function<bool()>& cond, absl::Duration timeout = absl::Seconds(10)) {
  const absl::Time end = absl::Now() + timeout;
  while (absl::Now() < end) {
    if (cond()) return true;
    absl::SleepFor(absl::Milliseconds(1));  // a poll of `cond`, not a wait for behaviour
  }
  return cond();
}

TEST(TriggeredLoop, RunsPeriodicallyOnItsWaitAndNotBefore) {
  Recorder rec;
  SimulatedClock clock;
  TriggeredLoop loop({"test-loop", "periodic", false, &clock}, [] { return absl::Seconds(20); },
                     [&](const std::string& r) { rec.Add(r); });
  loop.Start();
  for (size_t pass = 1; pass <= 3; ++pass) {
    ASSERT_TRUE(loop.AwaitIdle(absl::Seconds(10))) << "the loop never waited";
    EXPECT_EQ(clock.Advance(absl::Seconds(19)), 0u) << "a wait of 20 s ended at 19 s";
    EXPECT_EQ(rec.Get().size(), pass - 1);
    EXPECT_EQ(clock.Advance(absl::Seconds(1)), 1u) << "a wait of 20 s still pending at 20 s";
    ASSERT_TRUE(WaitFor([&] { return rec.Get().size() == pass; })) << "pass " << pass;
  }
  loop.Stop();
  for (const auto& r : rec.Get()) EXPECT_EQ(r, "periodic");
  EXPECT_EQ(rec.thread_name, "test-loop");
}

TEST(TriggeredLoop, ATriggerRunsAtOnceWithItsReasonAndStopIsPrompt) {
  Recorder rec;
  SimulatedClock clock;  // never advanced: only triggers and Stop end a wait
  TriggeredLoop loop({"t", "periodic", /*run_first=*/true, &clock}, [] { return absl::Hours(1); },
                     [&](const std::string& r) { rec.Add(r); });
  loop.Start();
  EXPECT_TRUE(WaitFor([&] { return rec.Get().size() == 1; }));
  EXPECT_EQ(rec.Get()[0], "start");
  loop.Trigger("netlink");
  EXPECT_TRUE(WaitFor([&] { return rec.Get().size() == 2; }));
  EXPECT_EQ(rec.Get()[1], "netlink");
  loop.Stop();  // returns: the hour's wait on a clock that does not move ends on Stop
  loop.Stop();  // idempotent
  EXPECT_EQ(rec.Get().size(), 2u);
}

TEST(TriggeredLoop, TriggersDuringABodyAreMergedIntoOneNextPass) {
  Recorder rec;
  SimulatedClock clock;
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  TriggeredLoop loop({"t", "periodic", false, &clock}, [] { return absl::Hours(1); }, [&](const std::string& r) {
    rec.Add(r);
    if (r == "first") {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return release; });
    }
  });
  loop.Start();
  loop.Trigger("first");
  EXPECT_TRUE(WaitFor([&] { return rec.Get().size() == 1; }));
  loop.Trigger("a");
  loop.Trigger("b");
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  EXPECT_TRUE(WaitFor([&] { return rec.Get().size() == 2; }));
  // Back in its wait with nothing requested: no third pass is pending.
  ASSERT_TRUE(clock.AwaitWaiters(1));
  loop.Stop();
  EXPECT_THAT(rec.Get(), ::testing::ElementsAre("first", "b"));
}

// An infinite wait (a loop with nothing periodic to do: the PFC watchdog
// with no PFC-enabled netdev) sleeps until triggered: no pass, no spin.
TEST(TriggeredLoop, AnInfiniteWaitRunsOnlyOnTriggers) {
  Recorder rec;
  SimulatedClock clock;
  std::atomic<int> waits{0};
  TriggeredLoop loop({"t", "periodic", false, &clock}, [&] {
    ++waits;
    return absl::InfiniteDuration();
  }, [&](const std::string& r) { rec.Add(r); });
  loop.Start();
  ASSERT_TRUE(clock.AwaitWaiters(1));
  EXPECT_EQ(clock.Advance(absl::Hours(24 * 365)), 0u) << "an infinite wait had a deadline";
  EXPECT_TRUE(rec.Get().empty());
  EXPECT_EQ(waits.load(), 1) << "the loop woke up without a trigger";
  loop.Trigger("go");
  EXPECT_TRUE(WaitFor([&] { return rec.Get().size() == 1; }));
  EXPECT_EQ(rec.Get()[0], "go");
  loop.Stop();
}

// AwaitIdle: true at once for a loop never started; false while a trigger's
// pass is held up; true once that pass has run and the loop waits again;
// false while the clock has passed the wait's end and the pass it is owed
// has not run; true after Stop.
TEST(TriggeredLoop, AwaitIdleWaitsForEveryPassAskedFor) {
  SimulatedClock clock;
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> passes{0};
  TriggeredLoop loop({"t", "periodic", false, &clock}, [] { return absl::Seconds(5); }, [&](const std::string&) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return release; });
    release = false;
    ++passes;
  });
  EXPECT_TRUE(loop.AwaitIdle(absl::Milliseconds(1))) << "a loop never started is idle";
  loop.Start();
  ASSERT_TRUE(loop.AwaitIdle(absl::Seconds(10)));
  loop.Trigger("go");
  EXPECT_FALSE(loop.AwaitIdle(absl::Milliseconds(50))) << "idle with a pass held up";
  auto let_one_pass = [&] {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
    cv.notify_all();
  };
  let_one_pass();
  ASSERT_TRUE(loop.AwaitIdle(absl::Seconds(10)));
  EXPECT_EQ(passes.load(), 1);
  clock.Advance(absl::Seconds(5));
  EXPECT_FALSE(loop.AwaitIdle(absl::Milliseconds(50))) << "idle with a periodic pass owed";
  let_one_pass();
  ASSERT_TRUE(loop.AwaitIdle(absl::Seconds(10)));
  EXPECT_EQ(passes.load(), 2);
  loop.Stop();
  EXPECT_TRUE(loop.AwaitIdle(absl::Milliseconds(1)));
}

}  // namespace
}  // namespace roced::util

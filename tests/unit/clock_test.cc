// util::SimulatedClock, the clock the unit tests move by hand: a timed wait
// ends when the clock passes its deadline and not before, a condition ends
// it at once, SleepFor returns only once the clock has moved, a wall-clock
// step moves neither the monotonic clock nor the waits. And RealClock's
// waits: a held condition returns at once, a timeout returns false.
#include "util/clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace roced::util {
namespace {

// Polls `done` (set by another thread; 1 ms polls, not a wait for time to
// pass) for at most 10 s of real time.
bool Eventually(const std::atomic<bool>& done) {
  for (int i = 0; i < 10000 && !done.load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // poll: `done`
  }
  return done.load();
}

TEST(SimulatedClock, ATimedWaitEndsWhenTheClockPassesItsDeadline) {
  SimulatedClock clock;
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<bool> done{false}, result{true};
  std::thread waiter([&] {
    std::unique_lock<std::mutex> lock(mu);
    result = clock.WaitFor(lock, cv, absl::Seconds(10), [] { return false; });
    done = true;
  });
  ASSERT_TRUE(clock.AwaitWaiters(1));
  EXPECT_EQ(clock.Advance(absl::Seconds(9)), 0u) << "a 10 s wait ended at 9 s";
  EXPECT_FALSE(done.load());
  EXPECT_EQ(clock.Advance(absl::Seconds(1)), 1u) << "a 10 s wait still pending at 10 s";
  EXPECT_TRUE(Eventually(done));
  waiter.join();
  EXPECT_FALSE(result.load()) << "a wait that timed out reports its condition false";
  EXPECT_EQ(clock.Waiters(), 0u);
  EXPECT_EQ(clock.Monotonic(), absl::UnixEpoch() + absl::Seconds(10));
}

TEST(SimulatedClock, AConditionEndsAWaitWithoutTheClockMoving) {
  SimulatedClock clock;
  std::mutex mu;
  std::condition_variable cv;
  bool ready = false;
  std::atomic<bool> done{false}, result{false};
  std::thread waiter([&] {
    std::unique_lock<std::mutex> lock(mu);
    result = clock.WaitFor(lock, cv, absl::InfiniteDuration(), [&] { return ready; });
    done = true;
  });
  ASSERT_TRUE(clock.AwaitWaiters(1));
  EXPECT_EQ(clock.Advance(absl::Hours(1000)), 0u) << "a wait without a deadline had one";
  EXPECT_FALSE(done.load());
  {
    std::lock_guard<std::mutex> lock(mu);
    ready = true;
  }
  cv.notify_all();
  EXPECT_TRUE(Eventually(done));
  waiter.join();
  EXPECT_TRUE(result.load());
}

TEST(SimulatedClock, SleepForReturnsOnlyOnceTheClockHasMoved) {
  SimulatedClock clock;
  std::atomic<bool> done{false};
  std::thread sleeper([&] {
    clock.SleepFor(absl::Minutes(5));
    done = true;
  });
  ASSERT_TRUE(clock.AwaitWaiters(1));
  EXPECT_EQ(clock.Advance(absl::Minutes(4)), 0u) << "a 5 min sleep ended at 4 min";
  EXPECT_FALSE(done.load());
  EXPECT_EQ(clock.Advance(absl::Minutes(1)), 1u) << "a 5 min sleep still pending at 5 min";
  EXPECT_TRUE(Eventually(done));
  sleeper.join();
}

TEST(SimulatedClock, AWallClockStepMovesNeitherTheMonotonicClockNorTheWaits) {
  SimulatedClock clock(absl::FromUnixSeconds(1'000'000));
  clock.StepWall(absl::Hours(-2));
  EXPECT_EQ(clock.Now(), absl::FromUnixSeconds(1'000'000) - absl::Hours(2));
  EXPECT_EQ(clock.Monotonic(), absl::UnixEpoch());
  clock.Advance(absl::Seconds(3));
  EXPECT_EQ(clock.Now(), absl::FromUnixSeconds(1'000'000) - absl::Hours(2) + absl::Seconds(3));
  EXPECT_EQ(clock.Monotonic(), absl::UnixEpoch() + absl::Seconds(3));
}

TEST(SimulatedClock, AwaitWaitersTimesOutWhenNobodyWaits) {
  SimulatedClock clock;
  EXPECT_FALSE(clock.AwaitWaiters(1, absl::Milliseconds(20)));
}

TEST(RealClock, WaitsReturnAtOnceOnAHeldConditionAndFalseOnATimeout) {
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(mu);
  EXPECT_TRUE(RealClock()->WaitFor(lock, cv, absl::InfiniteDuration(), [] { return true; }));
  EXPECT_FALSE(RealClock()->WaitFor(lock, cv, absl::Milliseconds(1), [] { return false; }));
  EXPECT_FALSE(RealClock()->WaitFor(lock, cv, absl::Seconds(-1), [] { return false; }));
  const absl::Time first = RealClock()->Monotonic();
  const absl::Time second = RealClock()->Monotonic();
  EXPECT_LE(first, second);
}

}  // namespace
}  // namespace roced::util

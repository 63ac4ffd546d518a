// Time as roced reads it, passed in rather than read from the system: the
// wall clock (may be stepped), the monotonic clock (only differences mean
// anything), and timed waits on a condition variable or alone.
//
// RealClock() is the system's. SimulatedClock is a clock a test moves by
// hand: its waits end when Advance() moves its monotonic time past their
// deadline (or, for a condition wait, when the condition holds), so a test
// drives a periodic loop pass by pass without sleeping.
//
// Threads: every method may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"

namespace roced::util {

class Clock {
 public:
  virtual ~Clock() = default;
  // The wall clock.
  virtual absl::Time Now() = 0;
  // The monotonic clock, from an arbitrary epoch.
  virtual absl::Time Monotonic() = 0;
  // With `lock` held on the mutex `cv` is used with: waits until `pred()`
  // holds or `timeout` has passed on the monotonic clock
  // (absl::InfiniteDuration(): until `pred()` holds). Returns `pred()`.
  bool WaitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, absl::Duration timeout,
               const std::function<bool()>& pred);
  // The same up to `deadline` on the monotonic clock (InfiniteFuture: until
  // `pred()` holds): a deadline taken before the caller worked out how long
  // to wait is not moved by time that passed meanwhile.
  virtual bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, absl::Time deadline,
                         const std::function<bool()>& pred) = 0;
  // Waits `d` on the monotonic clock.
  virtual void SleepFor(absl::Duration d) = 0;
};

// The system's clock (absl::Now, std::chrono::steady_clock); never null.
Clock* RealClock();

class SimulatedClock : public Clock {
 public:
  // The wall clock starts at `wall`, the monotonic one at the Unix epoch.
  explicit SimulatedClock(absl::Time wall = absl::FromUnixSeconds(1'800'000'000));
  // Aborts when a wait is still pending: a clock must outlive what waits on it.
  ~SimulatedClock() override;
  SimulatedClock(const SimulatedClock&) = delete;
  SimulatedClock& operator=(const SimulatedClock&) = delete;

  absl::Time Now() override;
  absl::Time Monotonic() override;
  bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, absl::Time deadline,
                 const std::function<bool()>& pred) override;
  void SleepFor(absl::Duration d) override;

  // Moves both clocks by `d` (>= 0) and wakes the waits it ends; returns
  // how many pending waits it ended.
  size_t Advance(absl::Duration d);
  // Advance(d), then blocks (real time, at most 30 s) until every wait it
  // ended has returned and at least `waiters` waits are pending again (with
  // a loop's AwaitIdle: the pass it woke has run). False at the timeout.
  bool Tick(absl::Duration d, size_t waiters = 0);
  // Steps the wall clock alone (either way), as an NTP step or an operator
  // does; the monotonic clock and the waits are not moved.
  void StepWall(absl::Duration d);
  // How many waits are pending now, with a deadline or without.
  size_t Waiters();
  // Blocks, in real time for at most `timeout`, until at least `n` waits
  // are pending: a loop that has finished its pass and waits again. False
  // at the timeout.
  bool AwaitWaiters(size_t n, absl::Duration timeout = absl::Seconds(30));

 private:
  struct Waiter {
    std::condition_variable* cv;
    absl::Time deadline;  // monotonic; InfiniteFuture for none
  };
  bool Due(const Waiter& w);
  // Moves the clocks; returns how many pending waits it ended.
  size_t AdvanceLocked(absl::Duration d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::mutex mu_;
  std::condition_variable changed_;  // waiters_ or the time changed
  absl::Time wall_ ABSL_GUARDED_BY(mu_);
  absl::Time mono_ ABSL_GUARDED_BY(mu_);
  std::list<Waiter*> waiters_ ABSL_GUARDED_BY(mu_);
  uint64_t ended_ ABSL_GUARDED_BY(mu_) = 0;  // waits returned so far
};

}  // namespace roced::util

#include "util/clock.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "absl/time/clock.h"

namespace roced::util {
namespace {

class SystemClock : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
  absl::Time Monotonic() override {
    return absl::UnixEpoch() + absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
  }
  bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, absl::Time deadline,
                 const std::function<bool()>& pred) override {
    if (deadline == absl::InfiniteFuture()) {
      cv.wait(lock, pred);
      return true;
    }
    // A year stands for longer: steady_clock's now plus nanoseconds::max()
    // would overflow and not wait at all.
    const absl::Duration d = std::clamp(deadline - Monotonic(), absl::ZeroDuration(), absl::Hours(24 * 365));
    return cv.wait_for(lock, absl::ToChronoNanoseconds(d), pred);
  }
  void SleepFor(absl::Duration d) override { absl::SleepFor(d); }
};

}  // namespace

bool Clock::WaitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, absl::Duration timeout,
                    const std::function<bool()>& pred) {
  const absl::Time deadline = timeout == absl::InfiniteDuration()
                                  ? absl::InfiniteFuture()
                                  : Monotonic() + std::max(timeout, absl::ZeroDuration());
  return WaitUntil(lock, cv, deadline, pred);
}

Clock* RealClock() {
  static SystemClock* const clock = new SystemClock;
  return clock;
}

SimulatedClock::SimulatedClock(absl::Time wall) : wall_(wall), mono_(absl::UnixEpoch()) {}

SimulatedClock::~SimulatedClock() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!waiters_.empty()) {
    std::fprintf(stderr, "SimulatedClock destroyed with %zu wait(s) pending on it\n", waiters_.size());
    std::abort();
  }
}

absl::Time SimulatedClock::Now() {
  std::lock_guard<std::mutex> lock(mu_);
  return wall_;
}

absl::Time SimulatedClock::Monotonic() {
  std::lock_guard<std::mutex> lock(mu_);
  return mono_;
}

bool SimulatedClock::Due(const Waiter& w) {
  std::lock_guard<std::mutex> lock(mu_);
  return mono_ >= w.deadline;
}

bool SimulatedClock::WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, absl::Time deadline,
                               const std::function<bool()>& pred) {
  if (pred()) return true;
  Waiter w{&cv, deadline};
  {
    std::lock_guard<std::mutex> g(mu_);
    waiters_.push_back(&w);
  }
  changed_.notify_all();
  bool held = false;
  while (!(held = pred()) && !Due(w)) {
    // Advance notifies `cv` without the caller's mutex, so a notify can fall
    // between Due() and this wait; the short real-time slice bounds that
    // miss to 2 ms instead of forever.
    cv.wait_for(lock, std::chrono::milliseconds(2));
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    waiters_.remove(&w);
    ++ended_;
  }
  changed_.notify_all();
  return held;
}

void SimulatedClock::SleepFor(absl::Duration d) {
  std::unique_lock<std::mutex> lock(mu_);
  Waiter w{&changed_, mono_ + std::max(d, absl::ZeroDuration())};
  waiters_.push_back(&w);
  changed_.notify_all();
  changed_.wait(lock, [&] { return mono_ >= w.deadline; });
  waiters_.remove(&w);
  ++ended_;
  changed_.notify_all();
}

size_t SimulatedClock::AdvanceLocked(absl::Duration d) {
  size_t due = 0;
  const absl::Time before = mono_;
  const absl::Duration step = std::max(d, absl::ZeroDuration());
  mono_ += step;
  wall_ += step;
  for (Waiter* w : waiters_) {
    if (w->deadline > mono_) continue;
    if (w->deadline > before) ++due;
    w->cv->notify_all();
  }
  return due;
}

size_t SimulatedClock::Advance(absl::Duration d) {
  size_t due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    due = AdvanceLocked(d);
  }
  changed_.notify_all();
  return due;
}

bool SimulatedClock::Tick(absl::Duration d, size_t waiters) {
  std::unique_lock<std::mutex> lock(mu_);
  // The count and the step in one critical section: a wait that ends just
  // before the step is not taken for one the step ended.
  const uint64_t target = ended_ + AdvanceLocked(d);
  changed_.notify_all();
  return changed_.wait_for(lock, std::chrono::seconds(30),
                           [&] { return ended_ >= target && waiters_.size() >= waiters; });
}

void SimulatedClock::StepWall(absl::Duration d) {
  std::lock_guard<std::mutex> lock(mu_);
  wall_ += d;
}

size_t SimulatedClock::Waiters() {
  std::lock_guard<std::mutex> lock(mu_);
  return waiters_.size();
}

bool SimulatedClock::AwaitWaiters(size_t n, absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return changed_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [&] { return waiters_.size() >= n; });
}

}  // namespace roced::util

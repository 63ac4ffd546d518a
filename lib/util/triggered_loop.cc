#include "util/triggered_loop.h"
#include "util/thread_name.h"

#include <pthread.h>

#include <algorithm>

namespace roced::util {

TriggeredLoop::TriggeredLoop(Options options, WaitFn wait, Body body)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : RealClock()),
      wait_(std::move(wait)),
      body_(std::move(body)) {}

TriggeredLoop::~TriggeredLoop() { Stop(); }

void TriggeredLoop::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  started_ = true;
  thread_ = std::thread([this] {
    if (!options_.name.empty()) util::NameThisThread(options_.name);
    Run();
  });
}

void TriggeredLoop::Trigger(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    requested_ = true;
    reason_ = reason;
  }
  cv_.notify_all();
}

void TriggeredLoop::Stop() {
  std::thread thread;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread = std::move(thread_);
  }
  cv_.notify_all();
  idle_cv_.notify_all();
  if (thread.joinable()) thread.join();
}

bool TriggeredLoop::AwaitIdle(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [this] {
    // In its wait, nothing asked for, and its deadline not yet reached (a
    // clock moved past it wakes the loop, which is not idle then).
    return stop_ || !started_ || (waiting_ && !requested_ && clock_->Monotonic() < deadline_);
  });
}

void TriggeredLoop::Run() {
  if (options_.run_first) body_("start");
  while (true) {
    // The wait runs from before it is worked out, so time passing while
    // wait_() runs (or a test's clock step) does not move its end.
    const absl::Time start = clock_->Monotonic();
    const absl::Duration wait = std::max(wait_(), absl::ZeroDuration());
    // An infinite wait is a wait for a trigger.
    const absl::Time deadline = wait == absl::InfiniteDuration() ? absl::InfiniteFuture() : start + wait;
    std::string reason = options_.periodic_reason;
    {
      std::unique_lock<std::mutex> lock(mu_);
      waiting_ = true;
      deadline_ = deadline;
      idle_cv_.notify_all();
      clock_->WaitUntil(lock, cv_, deadline, [this] { return stop_ || requested_; });
      waiting_ = false;
      if (stop_) return;
      if (requested_) reason = reason_;
      requested_ = false;
    }
    body_(reason);
  }
}

}  // namespace roced::util

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
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (thread_.joinable()) return;
    stop_ = false;
    started_ = true;
  }
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
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  idle_cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

bool TriggeredLoop::AwaitIdle(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [this] {
    return stop_ || !started_ || (waiting_ && !requested_);
  });
}

void TriggeredLoop::Run() {
  if (options_.run_first) body_("start");
  while (true) {
    const absl::Duration wait = std::max(wait_(), absl::ZeroDuration());
    std::string reason = options_.periodic_reason;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // An infinite wait is a wait for a trigger.
      waiting_ = true;
      idle_cv_.notify_all();
      clock_->WaitFor(lock, cv_, wait, [this] { return stop_ || requested_; });
      waiting_ = false;
      if (stop_) return;
      if (requested_) reason = reason_;
      requested_ = false;
    }
    body_(reason);
  }
}

}  // namespace roced::util

// One thread that runs a body when triggered or when its wait runs out: the
// shape of every periodic-with-events loop in roced (discovery, reconcile,
// counter refresh, probe scheduler and lease reaper, PFC watchdog polls).
//
// Threads: Start, Trigger and Stop may be called from any thread; the body
// and the wait function run on the loop's own thread (named `name` for
// top(1) and /proc, at most 15 characters). Triggers that arrive while the
// body runs are merged into one next pass carrying the latest reason. Stop()
// wakes the wait, lets a running body finish, and joins; it is idempotent and
// the destructor calls it. The body must not call Stop().
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "util/clock.h"

namespace roced::util {

class TriggeredLoop {
 public:
  struct Options {
    std::string name;                       // thread name
    std::string periodic_reason = "periodic";  // the body's reason when the wait ran out
    bool run_first = false;                 // run the body once right at Start
    Clock* clock = nullptr;                 // the waits' clock; null: RealClock()
  };
  // How long to wait before the next periodic pass (asked before every
  // wait); absl::InfiniteDuration() waits for a trigger only.
  using WaitFn = std::function<absl::Duration()>;
  using Body = std::function<void(const std::string& reason)>;

  TriggeredLoop(Options options, WaitFn wait, Body body);
  ~TriggeredLoop();
  TriggeredLoop(const TriggeredLoop&) = delete;
  TriggeredLoop& operator=(const TriggeredLoop&) = delete;

  void Start();
  // Runs the body as soon as possible with `reason`.
  void Trigger(const std::string& reason);
  void Stop();
  // Blocks, in real time for at most `timeout`, until the loop is in its
  // wait with no trigger pending (or stopped, or never started): every pass
  // asked for so far has run. For tests that move a SimulatedClock and for
  // orderly hand-offs. False at the timeout.
  bool AwaitIdle(absl::Duration timeout);

 private:
  void Run();

  const Options options_;
  Clock* const clock_;
  const WaitFn wait_;
  const Body body_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool requested_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool waiting_ ABSL_GUARDED_BY(mu_) = false;  // in the wait (AwaitIdle)
  absl::Time deadline_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();  // of that wait, monotonic
  std::condition_variable idle_cv_;
  std::string reason_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace roced::util

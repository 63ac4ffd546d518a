// The event stream behind WatchState: subscriptions with bounded queues and
// the publisher that stamps and fans out each event.
//
// Threads: any thread may publish, subscribe or unsubscribe; each
// Subscription is read by one thread (its WatchState handler). EventBus::mu_
// is a leaf lock: no other lock is taken while it is held except each
// Subscription's own.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "roced/v1/agent.pb.h"

namespace roced::agent {

// One WatchState subscriber's queue. Events beyond `kMaxQueued` drop the
// oldest (a slow reader then gets a fresh full state instead).
class Subscription {
 public:
  static constexpr size_t kMaxQueued = 1024;
  // Waits up to `timeout` for the next event. False on timeout or when the
  // subscription was closed.
  bool Next(roced::v1::StateEvent* event, absl::Duration timeout);
  void Push(const roced::v1::StateEvent& event);
  void Close();
  bool closed() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<roced::v1::StateEvent> queue_;
  bool closed_ = false;
};

class EventBus {
 public:
  // A new subscription that receives every event published from now on.
  std::shared_ptr<Subscription> Subscribe();
  // Closes `sub` and stops delivering to it.
  void Unsubscribe(const std::shared_ptr<Subscription>& sub);
  // Stamps `event` with the current time and queues it for every subscriber.
  void Publish(roced::v1::StateEvent event);
  // Closes every subscription (agent shutdown); later Publish calls reach no one.
  void CloseAll();

 private:
  std::mutex mu_;
  std::vector<std::shared_ptr<Subscription>> subscribers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace roced::agent

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

// One WatchState subscriber's queue. Events beyond `kMaxQueued`, or beyond
// `kMaxQueuedBytes` of encoded events, drop the oldest (a slow reader then
// gets a fresh full state instead).
class Subscription {
 public:
  static constexpr size_t kMaxQueued = 1024;
  // A full NodeState of a large node is tens of kB: a reader that stalls
  // pins at most 1 MiB, and all of them together kMaxSubscribers MiB.
  static constexpr size_t kMaxQueuedBytes = 1u << 20;
  // Waits up to `timeout` for the next event. False on timeout or when the
  // subscription was closed.
  bool Next(roced::v1::StateEvent* event, absl::Duration timeout);
  // `bytes`: the event's encoded size (what the queue's byte budget counts).
  void Push(const roced::v1::StateEvent& event, size_t bytes);
  void Close();
  bool closed() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<roced::v1::StateEvent, size_t>> queue_;
  size_t queued_bytes_ = 0;
  bool closed_ = false;
};

class EventBus {
 public:
  // Open subscriptions at most. Each is a WatchState stream holding a gRPC
  // thread and up to Subscription::kMaxQueuedBytes: a node has a few
  // watchers (a fleet controller, an operator's terminal or two); 64 bounds
  // what callers can pin to 64 threads and 64 MiB.
  static constexpr size_t kMaxSubscribers = 64;

  // A new subscription that receives every event published from now on;
  // null when kMaxSubscribers are open.
  std::shared_ptr<Subscription> Subscribe();
  // Closes `sub` and stops delivering to it (null: nothing).
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

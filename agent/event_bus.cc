#include "agent/event_bus.h"

#include <algorithm>

#include "absl/time/clock.h"
#include "util/proto_time.h"

namespace roced::agent {

bool Subscription::Next(roced::v1::StateEvent* event, absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                    [this] { return closed_ || !queue_.empty(); })) {
    return false;
  }
  if (queue_.empty()) return false;  // closed
  *event = std::move(queue_.front());
  queue_.pop_front();
  return true;
}

void Subscription::Push(const roced::v1::StateEvent& event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    if (queue_.size() >= kMaxQueued) queue_.pop_front();
    queue_.push_back(event);
  }
  cv_.notify_one();
}

void Subscription::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

bool Subscription::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

std::shared_ptr<Subscription> EventBus::Subscribe() {
  auto sub = std::make_shared<Subscription>();
  std::lock_guard<std::mutex> lock(mu_);
  subscribers_.push_back(sub);
  return sub;
}

void EventBus::Unsubscribe(const std::shared_ptr<Subscription>& sub) {
  sub->Close();
  std::lock_guard<std::mutex> lock(mu_);
  std::erase(subscribers_, sub);
}

void EventBus::Publish(roced::v1::StateEvent event) {
  *event.mutable_at() = util::ToProto(absl::Now());
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& s : subscribers_) s->Push(event);
}

void EventBus::CloseAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& s : subscribers_) s->Close();
  subscribers_.clear();
}

}  // namespace roced::agent

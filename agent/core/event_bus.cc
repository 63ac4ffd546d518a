#include "agent/core/event_bus.h"

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
  *event = std::move(queue_.front().first);
  queued_bytes_ -= queue_.front().second;
  queue_.pop_front();
  return true;
}

void Subscription::Push(const roced::v1::StateEvent& event, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    while (!queue_.empty() && (queue_.size() >= kMaxQueued || queued_bytes_ + bytes > kMaxQueuedBytes)) {
      queued_bytes_ -= queue_.front().second;
      queue_.pop_front();
    }
    queue_.emplace_back(event, bytes);
    queued_bytes_ += bytes;
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
  std::lock_guard<std::mutex> lock(mu_);
  if (subscribers_.size() >= kMaxSubscribers) return nullptr;
  auto sub = std::make_shared<Subscription>();
  subscribers_.push_back(sub);
  return sub;
}

void EventBus::Unsubscribe(const std::shared_ptr<Subscription>& sub) {
  if (sub == nullptr) return;
  sub->Close();
  std::lock_guard<std::mutex> lock(mu_);
  std::erase(subscribers_, sub);
}

void EventBus::Publish(roced::v1::StateEvent event) {
  *event.mutable_at() = util::ToProto(absl::Now());
  const size_t bytes = event.ByteSizeLong();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& s : subscribers_) s->Push(event, bytes);
}

void EventBus::CloseAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& s : subscribers_) s->Close();
  subscribers_.clear();
}

}  // namespace roced::agent

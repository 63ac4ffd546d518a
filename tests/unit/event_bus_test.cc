// EventBus's bounds: at most kMaxSubscribers subscriptions, each queue
// bounded by event count and by encoded bytes (the oldest events go).
#include <gtest/gtest.h>

#include "agent/core/event_bus.h"

namespace roced::agent {
namespace {

TEST(EventBus, RefusesSubscribersBeyondTheCapAndFreesAPlaceOnUnsubscribe) {
  EventBus bus;
  std::vector<std::shared_ptr<Subscription>> subs;
  for (size_t i = 0; i < EventBus::kMaxSubscribers; ++i) {
    subs.push_back(bus.Subscribe());
    ASSERT_NE(subs.back(), nullptr) << i;
  }
  EXPECT_EQ(bus.Subscribe(), nullptr);
  bus.Unsubscribe(nullptr);  // a refused subscription: nothing to do
  bus.Unsubscribe(subs.back());
  EXPECT_TRUE(subs.back()->closed());
  EXPECT_NE(bus.Subscribe(), nullptr);
  EXPECT_EQ(bus.Subscribe(), nullptr);
}

TEST(EventBus, AStalledReaderKeepsAtMostTheByteBudgetNewestFirst) {
  EventBus bus;
  auto sub = bus.Subscribe();
  ASSERT_NE(sub, nullptr);
  roced::v1::StateEvent big;
  big.mutable_device()->set_detail(std::string(100 * 1024, 'x'));
  for (int i = 0; i < 30; ++i) {
    big.mutable_device()->set_device("dev" + std::to_string(i));
    bus.Publish(big);
  }
  // 30 events of ~100 kB: only the newest ten fit in 1 MiB.
  std::vector<std::string> got;
  roced::v1::StateEvent ev;
  while (sub->Next(&ev, absl::ZeroDuration())) got.push_back(ev.device().device());
  ASSERT_FALSE(got.empty());
  EXPECT_LE(got.size() * 100 * 1024, Subscription::kMaxQueuedBytes);
  EXPECT_GE(got.size(), 9u);
  EXPECT_EQ(got.back(), "dev29");
  EXPECT_EQ(got.front(), "dev" + std::to_string(30 - got.size()));
}

TEST(EventBus, SmallEventsAreBoundedByCount) {
  EventBus bus;
  auto sub = bus.Subscribe();
  roced::v1::StateEvent ev;
  for (size_t i = 0; i < Subscription::kMaxQueued + 10; ++i) {
    ev.mutable_pfc_storm()->set_priority(static_cast<uint32_t>(i));
    bus.Publish(ev);
  }
  size_t n = 0;
  uint32_t first = 0;
  while (sub->Next(&ev, absl::ZeroDuration())) {
    if (n++ == 0) first = ev.pfc_storm().priority();
  }
  EXPECT_EQ(n, Subscription::kMaxQueued);
  EXPECT_EQ(first, 10u);
}

}  // namespace
}  // namespace roced::agent

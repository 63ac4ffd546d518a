// CallLimits' admission and its health report, without a server: the
// contexts are only keys here, never dereferenced. The stall watchdog and
// the interceptor are exercised over a real agent by
// e2e_grpc_stall_window_zero (tests/e2e/grpc_stall_e2e.sh).
#include "agent/api/call_limits.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace roced::agent {
namespace {

using ::testing::HasSubstr;

const grpc::ServerContextBase* Ctx(int i) {
  return reinterpret_cast<const grpc::ServerContextBase*>(static_cast<uintptr_t>(0x10000 + 16 * i));
}

struct Reports {
  std::vector<std::pair<bool, std::string>> seen;
  CallLimits::Report Sink() {
    return [this](bool healthy, const std::string& why) { seen.emplace_back(healthy, why); };
  }
};

// A caller that never reads keeps its calls in flight: past 32 it is
// refused before its handler runs, other identities are not, the refusal
// is reported once, and the report clears when one of its calls ends.
TEST(CallLimits, AStallingIdentityIsRefusedPast32WhileOthersAreServed) {
  Reports reports;
  CallLimits limits(CallLimitOptions{32, 192, absl::Seconds(20)}, reports.Sink());
  for (int i = 0; i < 32; ++i) {
    limits.CallStarted(true);
    ASSERT_TRUE(limits.Admit(Ctx(i), "viewer.test").ok()) << i;
  }
  for (int i = 32; i < 40; ++i) {
    limits.CallStarted(true);
    absl::Status s = limits.Admit(Ctx(i), "viewer.test");
    EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(s.message(), HasSubstr("too many calls in flight from viewer.test: at most 32 at once per caller"));
    limits.CallEnded(Ctx(i), true);  // refused: gRPC ends it at once
  }
  limits.CallStarted(true);
  EXPECT_TRUE(limits.Admit(Ctx(100), "admin.test").ok());
  ASSERT_EQ(reports.seen.size(), 1u);
  EXPECT_FALSE(reports.seen[0].first);
  EXPECT_THAT(reports.seen[0].second, HasSubstr("refusing calls: too many calls in flight from viewer.test"));
  limits.CallEnded(Ctx(100), true);
  EXPECT_EQ(reports.seen.size(), 1u);  // still at the limit: no change
  limits.CallEnded(Ctx(0), true);
  ASSERT_EQ(reports.seen.size(), 2u);
  EXPECT_TRUE(reports.seen[1].first);
  limits.CallStarted(true);
  EXPECT_TRUE(limits.Admit(Ctx(0), "viewer.test").ok());
  EXPECT_EQ(limits.tcp_calls(), 32);
}

// Many identities together cannot take every TCP thread: past
// max_tcp_calls every TCP call is refused, naming that limit.
TEST(CallLimits, ManyIdentitiesTogetherStopAtTheTcpLimit) {
  Reports reports;
  CallLimits limits(CallLimitOptions{32, 4, absl::Seconds(20)}, reports.Sink());
  for (int i = 0; i < 4; ++i) {
    limits.CallStarted(true);
    ASSERT_TRUE(limits.Admit(Ctx(i), "caller" + std::to_string(i)).ok());
  }
  limits.CallStarted(true);
  absl::Status s = limits.Admit(Ctx(4), "caller4");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("the agent has 4 calls in flight over TCP, its limit"));
  limits.CallEnded(Ctx(4), true);
  // Unix calls do not count against TCP's limit.
  limits.CallStarted(false);
  limits.CallEnded(Ctx(50), false);
  EXPECT_EQ(limits.tcp_calls(), 4);
  limits.CallEnded(Ctx(0), true);
  ASSERT_EQ(reports.seen.size(), 2u);
  EXPECT_FALSE(reports.seen[0].first);
  EXPECT_TRUE(reports.seen[1].first);
}

}  // namespace
}  // namespace roced::agent

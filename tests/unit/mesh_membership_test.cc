// lib/mesh/membership and slowdown: what a DNS name's addresses said of
// themselves, kept and asked again on their own clocks; this node placed
// among them; the rates under CPU pressure.
#include "mesh/membership.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mesh/slowdown.h"

namespace roced::mesh {
namespace {

using ::testing::ElementsAre;

const absl::Time kT0 = absl::FromUnixSeconds(1000);

std::vector<std::string> Names(const std::vector<Member>& members) {
  std::vector<std::string> out;
  for (const Member& m : members) out.push_back(m.name);
  return out;
}

TEST(DescribedMembers, AnAnswerIsKeptForItsTtlAFailureAskedAgainSooner) {
  DescribedMembers d;
  EXPECT_THAT(d.Listed({"10.0.0.1:7471", "10.0.0.2:7471"}, kT0), ElementsAre("10.0.0.1:7471", "10.0.0.2:7471"));
  d.Described("10.0.0.1:7471", Member{"a", "10.0.0.1:7471", "tor1", ""}, kT0);
  d.Described("10.0.0.2:7471", std::nullopt, kT0);
  EXPECT_THAT(Names(d.Members()), ElementsAre("a"));
  EXPECT_THAT(d.Listed({"10.0.0.1:7471", "10.0.0.2:7471"}, kT0 + kDescribeRetry), ElementsAre("10.0.0.2:7471"));
  EXPECT_THAT(d.Listed({"10.0.0.1:7471", "10.0.0.2:7471"}, kT0 + kDescribeTtl),
              ElementsAre("10.0.0.1:7471", "10.0.0.2:7471"));
}

TEST(DescribedMembers, AnAddressNoLongerListedIsForgottenAndANameCountsOnce) {
  DescribedMembers d;
  d.Listed({"10.0.0.1:7471", "10.0.0.2:7471", "10.0.0.3:7471"}, kT0);
  d.Described("10.0.0.1:7471", Member{"a", "10.0.0.1:7471", "", ""}, kT0);
  d.Described("10.0.0.2:7471", Member{"a", "10.0.0.2:7471", "", ""}, kT0);  // a second address of a
  d.Described("10.0.0.3:7471", Member{"", "10.0.0.3:7471", "", ""}, kT0);   // no node name
  ASSERT_EQ(d.Members().size(), 1u);
  EXPECT_EQ(d.Members()[0].address, "10.0.0.1:7471");
  d.Listed({"10.0.0.2:7471"}, kT0);
  ASSERT_EQ(d.Members().size(), 1u);
  EXPECT_EQ(d.Members()[0].address, "10.0.0.2:7471");
}

TEST(PlaceSelf, EmptyTorAndPodComeFromTheAgentAndAbsenceIsNamed) {
  std::vector<Member> members = {{"a", "10.0.0.1:7471", "", ""}, {"b", "10.0.0.2:7471", "tor9", "pod9"}};
  absl::StatusOr<Member> a = PlaceSelf(&members, "a", "tor1", "pod1");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->tor, "tor1");
  EXPECT_EQ(members[0].pod, "pod1");
  absl::StatusOr<Member> b = PlaceSelf(&members, "b", "tor1", "pod1");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->tor, "tor9");  // the membership's own ToR wins
  absl::StatusOr<Member> c = PlaceSelf(&members, "c", "", "");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(c.status().message()), testing::HasSubstr("this node (c) is not in the inventory"));
}

TEST(NextSlowdown, FollowsCpuPressureWithinItsBounds) {
  EXPECT_EQ(NextSlowdown(1, 50), 2);
  EXPECT_EQ(NextSlowdown(8, 90), 10);  // at most a tenth of the rates
  EXPECT_EQ(NextSlowdown(10, 90), 10);
  EXPECT_EQ(NextSlowdown(4, 5), 2);
  EXPECT_EQ(NextSlowdown(1, 0), 1);  // never faster than the schedule
  EXPECT_EQ(NextSlowdown(4, 20), 4);  // between the thresholds: kept
}

}  // namespace
}  // namespace roced::mesh

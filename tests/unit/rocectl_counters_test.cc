// rocectl counters' table: stable and driver names, priorities, rates, and
// the "only what moved" view.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tools/rocectl/counters_cmd.h"

namespace roced::ctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

roced::v1::GetCountersResponse Sample() {
  roced::v1::GetCountersResponse r;
  auto* hw = r.add_sets();
  hw->set_device("mlx5_0");
  hw->set_port(1);
  hw->set_netdev("ens1f0");
  hw->set_source("hw_counters");
  auto* c = hw->add_counters();
  c->set_name("cnp_sent");
  c->set_source_name("np_cnp_sent");
  c->set_value(101201);
  c->set_rate(12.5);
  c = hw->add_counters();
  c->set_name("roce_adp_retrans");
  c->set_source_name("roce_adp_retrans");
  c->set_value(7);
  c->set_rate(0);
  auto* eth = r.add_sets();
  eth->set_netdev("ens1f0");
  eth->set_source("ethtool");
  c = eth->add_counters();
  c->set_name("pfc_pause_frames_received");
  c->set_source_name("rx_prio3_pause");
  c->set_priority(3);
  c->set_value(5000);
  c->set_rate(2400);
  return r;
}

TEST(CountersTableTest, ShowsStableNameWithTheDriversNameAndPriority) {
  std::string t = CountersTable(Sample(), false, false);
  EXPECT_THAT(t, HasSubstr("cnp_sent (np_cnp_sent)"));
  EXPECT_THAT(t, HasSubstr("pfc_pause_frames_received (rx_prio3_pause)"));
  // Same name on both sides: not repeated.
  EXPECT_THAT(t, Not(HasSubstr("roce_adp_retrans (")));
  EXPECT_THAT(t, Not(HasSubstr("RATE/s")));
  // ethtool sets have no device: a dash, not an empty column.
  EXPECT_THAT(t, HasSubstr("-       -     ens1f0  ethtool"));
  EXPECT_THAT(t, testing::ContainsRegex("ethtool +pfc_pause_frames_received \\(rx_prio3_pause\\) +3 +5000"));
}

TEST(CountersTableTest, RatesViewShowsOnlyWhatMovedUnlessAskedForAll) {
  std::string moving = CountersTable(Sample(), true, true);
  EXPECT_THAT(moving, HasSubstr("RATE/s"));
  EXPECT_THAT(moving, testing::ContainsRegex("101201 +12.50\n"));
  EXPECT_THAT(moving, testing::ContainsRegex("5000 +2400\n"));
  EXPECT_THAT(moving, Not(HasSubstr("roce_adp_retrans")));
  std::string all = CountersTable(Sample(), true, false);
  EXPECT_THAT(all, testing::ContainsRegex("roce_adp_retrans +- +7 +0\n"));
}

TEST(CountersTableTest, SaysSoWhenNothingMovedOrNothingIsThere) {
  roced::v1::GetCountersResponse still = Sample();
  for (auto& s : *still.mutable_sets()) {
    for (auto& c : *s.mutable_counters()) c.set_rate(0);
  }
  EXPECT_EQ(CountersTable(still, true, true), "No counter moved.\n");
  EXPECT_EQ(CountersTable(roced::v1::GetCountersResponse(), false, false), "No counters.\n");
}

}  // namespace
}  // namespace roced::ctl

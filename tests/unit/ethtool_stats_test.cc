// EthtoolStats against the real kernel: a veth pair in a network namespace
// of the test's own (veth keeps ethtool statistics: peer_ifindex and
// per-queue XDP counters), plus the error paths (missing netdev, lo, which
// keeps none). ParsePfcStatName on the mlx5, bnxt_en and ice names.
#include "hal/ethtool_stats.h"

#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <sched.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <thread>

namespace roced::hal {
namespace {

std::map<std::string, uint64_t> AsMap(const std::vector<EthtoolStat>& stats) {
  std::map<std::string, uint64_t> m;
  for (const EthtoolStat& s : stats) m[s.name] = s.value;
  return m;
}

// Runs `body` on a thread that moved into a new network namespace (a
// network namespace is per thread, so the rest of the test process, and
// the host, never see the links it makes). False when namespaces are not
// available here.
bool RunInFreshNetns(const std::function<void(nl_sock*)>& body) {
  bool ran = false;
  std::thread t([&] {
    if (unshare(CLONE_NEWNET) != 0) return;
    nl_sock* sock = nl_socket_alloc();
    if (sock == nullptr || nl_connect(sock, NETLINK_ROUTE) != 0) return;
    ran = true;
    body(sock);
    nl_socket_free(sock);
  });
  t.join();
  return ran;
}

// A veth pair in the calling thread's namespace (no IFLA_NET_NS_* given, so
// the peer stays there too); `queues` > 0 sets its rx/tx queue count.
int AddVeth(nl_sock* sock, const char* name, const char* peer_name, int queues) {
  rtnl_link* link = rtnl_link_veth_alloc();
  if (link == nullptr) return -1;
  rtnl_link_set_name(link, name);
  if (queues > 0) {
    rtnl_link_set_num_rx_queues(link, static_cast<uint32_t>(queues));
    rtnl_link_set_num_tx_queues(link, static_cast<uint32_t>(queues));
  }
  rtnl_link* peer = rtnl_link_veth_get_peer(link);
  rtnl_link_set_name(peer, peer_name);
  rtnl_link_put(peer);
  int err = rtnl_link_add(sock, link, NLM_F_CREATE | NLM_F_EXCL);
  rtnl_link_veth_release(link);
  return err;
}

int DeleteLink(nl_sock* sock, const char* name) {
  rtnl_link* link = rtnl_link_alloc();
  rtnl_link_set_name(link, name);
  int err = rtnl_link_delete(sock, link);
  rtnl_link_put(link);
  return err;
}

TEST(EthtoolStatsTest, ReadsVethStatisticsThroughTheIoctls) {
  bool ran = RunInFreshNetns([](nl_sock* sock) {
    ASSERT_EQ(AddVeth(sock, "rea", "reb", 0), 0);
    EthtoolStats ethtool;
    absl::StatusOr<std::vector<EthtoolStat>> stats = ethtool.ReadStats("rea");
    ASSERT_TRUE(stats.ok()) << stats.status();
    auto m = AsMap(*stats);
    ASSERT_EQ(m.count("peer_ifindex"), 1u);
    EXPECT_EQ(m["peer_ifindex"], if_nametoindex("reb"));
    EXPECT_EQ(m.count("rx_queue_0_xdp_packets"), 1u);
    // Names come back in the driver's order, peer_ifindex first for veth.
    EXPECT_EQ(stats->front().name, "peer_ifindex");
    // A second read reuses the cached names and gives the same set.
    absl::StatusOr<std::vector<EthtoolStat>> again = ethtool.ReadStats("rea");
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(AsMap(*again), m);
  });
  if (!ran) GTEST_SKIP() << "no network namespaces here";
}

TEST(EthtoolStatsTest, NetdevReplacedWithAnotherStatisticsSetIsReadWithItsOwnNames) {
  bool ran = RunInFreshNetns([](nl_sock* sock) {
    ASSERT_EQ(AddVeth(sock, "rec", "red", 1), 0);
    EthtoolStats ethtool;
    auto one = ethtool.ReadStats("rec");
    ASSERT_TRUE(one.ok()) << one.status();
    EXPECT_EQ(AsMap(*one).count("rx_queue_1_xdp_packets"), 0u);
    ASSERT_EQ(DeleteLink(sock, "rec"), 0);
    ASSERT_EQ(AddVeth(sock, "rec", "red", 2), 0);
    auto two = ethtool.ReadStats("rec");
    ASSERT_TRUE(two.ok()) << two.status();
    EXPECT_EQ(AsMap(*two).count("rx_queue_1_xdp_packets"), 1u);
    EXPECT_EQ(AsMap(*two)["peer_ifindex"], if_nametoindex("red"));
  });
  if (!ran) GTEST_SKIP() << "no network namespaces here";
}

TEST(EthtoolStatsTest, MissingNetdevIsNotFound) {
  bool ran = RunInFreshNetns([](nl_sock*) {
    EthtoolStats ethtool;
    auto stats = ethtool.ReadStats("nosuchdev0");
    EXPECT_TRUE(absl::IsNotFound(stats.status())) << stats.status();
    EXPECT_THAT(std::string(stats.status().message()), ::testing::HasSubstr("nosuchdev0"));
  });
  if (!ran) GTEST_SKIP() << "no network namespaces here";
}

TEST(EthtoolStatsTest, NetdevWithoutStatisticsIsUnimplemented) {
  bool ran = RunInFreshNetns([](nl_sock*) {
    EthtoolStats ethtool;
    auto stats = ethtool.ReadStats("lo");
    EXPECT_TRUE(absl::IsUnimplemented(stats.status())) << stats.status();
  });
  if (!ran) GTEST_SKIP() << "no network namespaces here";
}

TEST(EthtoolStatsTest, NameThatCannotBeANetdevIsRejectedBeforeAnyIoctl) {
  EthtoolStats ethtool;
  EXPECT_TRUE(absl::IsInvalidArgument(ethtool.ReadStats("").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ethtool.ReadStats("a-name-longer-than-15").status()));
}

TEST(ParsePfcStatNameTest, ParsesEveryPauseAndDiscardNameOfMlx5BnxtAndIce) {
  struct Case {
    const char* name;
    PfcStatKind kind;
    std::optional<uint32_t> priority;
  };
  const Case cases[] = {
      {"rx_prio0_pause", PfcStatKind::kRxPause, 0},
      {"tx_prio7_pause", PfcStatKind::kTxPause, 7},
      {"rx_prio3_pause_duration", PfcStatKind::kRxPauseDuration, 3},
      {"tx_prio3_pause_duration", PfcStatKind::kTxPauseDuration, 3},
      {"rx_prio3_pause_transition", PfcStatKind::kRxPauseTransition, 3},
      {"rx_prio5_buf_discard", PfcStatKind::kRxBufferDiscard, 5},
      {"rx_prio5_cong_discard", PfcStatKind::kRxCongestionDiscard, 5},
      {"rx_prio6_marked", PfcStatKind::kRxEcnMarked, 6},
      {"rx_pause_ctrl_phy", PfcStatKind::kRxPausePhy, std::nullopt},
      {"tx_pause_ctrl_phy", PfcStatKind::kTxPausePhy, std::nullopt},
      {"rx_discards_phy", PfcStatKind::kRxDiscardsPhy, std::nullopt},
      {"tx_pause_storm_warning_events", PfcStatKind::kTxPauseStormWarning, std::nullopt},
      {"tx_pause_storm_error_events", PfcStatKind::kTxPauseStormError, std::nullopt},
      {"tx_prio2_packets", PfcStatKind::kTxPackets, 2},
      // bnxt_en (bnxt_ethtool.c)
      {"rx_pfc_ena_frames_pri3", PfcStatKind::kRxPause, 3},
      {"tx_pfc_ena_frames_pri0", PfcStatKind::kTxPause, 0},
      {"pfc_pri3_rx_duration_us", PfcStatKind::kRxPauseDuration, 3},
      {"pfc_pri7_tx_duration_us", PfcStatKind::kTxPauseDuration, 7},
      {"pfc_pri3_rx_transitions", PfcStatKind::kRxPauseTransition, 3},
      {"rx_discard_packets_cos4", PfcStatKind::kRxBufferDiscard, 4},
      {"tx_packets_pri3", PfcStatKind::kTxPackets, 3},
      {"rx_pause_frames", PfcStatKind::kRxPausePhy, std::nullopt},
      {"tx_pause_frames", PfcStatKind::kTxPausePhy, std::nullopt},
      {"rx_stat_discard", PfcStatKind::kRxDiscardsPhy, std::nullopt},
      // ice (ice_ethtool.c)
      {"rx_priority_3_xoff.nic", PfcStatKind::kRxPause, 3},
      {"tx_priority_5_xoff.nic", PfcStatKind::kTxPause, 5},
      {"rx_priority_3_xon.nic", PfcStatKind::kRxPauseTransition, 3},
      {"link_xoff_rx.nic", PfcStatKind::kRxPausePhy, std::nullopt},
      {"link_xoff_tx.nic", PfcStatKind::kTxPausePhy, std::nullopt},
      {"rx_dropped.nic", PfcStatKind::kRxDiscardsPhy, std::nullopt},
  };
  for (const Case& c : cases) {
    std::optional<PfcStatName> parsed = ParsePfcStatName(c.name);
    ASSERT_TRUE(parsed.has_value()) << c.name;
    EXPECT_EQ(parsed->kind, c.kind) << c.name;
    EXPECT_EQ(parsed->priority, c.priority) << c.name;
  }
}

TEST(ParsePfcStatNameTest, IgnoresOtherStatisticsAndImpossiblePriorities) {
  for (const char* name :
       {"rx_prio8_pause", "rx_prio10_pause", "rx_prio_pause", "rx_prio3_bytes",
        "rx_prio3_packets", "tx_prio3_pause_transition", "tx_prio3_marked", "rx_prio3_pause_",
        "rx_pause", "peer_ifindex", "rx_queue_0_xdp_packets", "rx_prio-1_pause", "",
        "rx_pfc_ena_frames_pri8", "rx_pfc_ena_frames_pri", "rx_priority_3_xoff", "tx_priority_3_xon.nic",
        "pfc_pri3_tx_transitions", "rx_pause_frames_x", "rx_priority_33_xoff.nic"}) {
    EXPECT_FALSE(ParsePfcStatName(name).has_value()) << name;
  }
}

}  // namespace
}  // namespace roced::hal

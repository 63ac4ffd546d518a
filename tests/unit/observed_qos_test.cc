// reconcile::ObserveQos: every RoCE port's QoS as the node reports it
// (NodeState.interface_qos, what `rocectl status` shows whether or not the
// config manages a field), over the in-memory node.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_node_io_for_test.h"
#include "reconcile/observed_qos.h"

namespace roced::reconcile {
namespace {

using ::testing::ElementsAre;

roced::v1::RdmaDevice Device(const std::string& name, const std::string& netdev, const std::string& link_layer) {
  roced::v1::RdmaDevice d;
  d.set_name(name);
  auto* p = d.add_ports();
  p->set_number(1);
  p->set_link_layer(link_layer);
  p->set_netdev(netdev);
  return d;
}

InterfaceObserved LosslessPrio3() {
  InterfaceObserved o;
  o.mtu = 9000;
  o.dscp = DscpMap{{26, 3}, {48, 6}};
  o.ets = Ets{{0, 0, 0, 1, 0, 0, 0, 0}, {50, 50, 0, 0, 0, 0, 0, 0}, {2, 2, 0, 0, 0, 0, 0, 0}};
  o.dcb_willing = false;
  o.pfc = Pfc{1 << 3, 7};
  o.pfc_cap = 8;
  o.buffer = PortBuffer{{0, 0, 0, 1, 0, 0, 0, 0}, {130944, 130944, 0, 0, 0, 0, 0, 0}, 1048576};
  o.dcbx_host = true;
  o.pfc_prevention = 100;
  o.ecn_np = 1 << 3;
  o.ecn_rp = 1 << 3;
  o.dcqcn = {{"cnp_dscp", 48}, {"cnp_802p_prio", 6}};
  o.roce_mode = roced::v1::ROCE_MODE_V2;
  o.roce_tos = 106;
  return o;
}

// Each Ethernet port with a netdev, InfiniBand ports and ports without a
// netdev left out, in device order.
TEST(ObserveQos, ReadsEveryRocePortOnly) {
  FakeNodeIoForTest io;
  io.interfaces["ens1f0"] = LosslessPrio3();
  std::vector<roced::v1::RdmaDevice> devices = {Device("mlx5_0", "ens1f0", "Ethernet"),
                                                Device("mlx5_ib", "", "InfiniBand"),
                                                Device("mlx5_1", "", "Ethernet"), Device("rxe0", "eth0", "Ethernet")};
  std::vector<roced::v1::InterfaceQos> qos = ObserveQos(&io, devices);
  ASSERT_EQ(qos.size(), 2u);
  EXPECT_EQ(qos[0].netdev(), "ens1f0");
  EXPECT_EQ(qos[0].rdma_device(), "mlx5_0");
  EXPECT_EQ(qos[0].port(), 1u);
  EXPECT_EQ(qos[0].mtu(), 9000u);
  EXPECT_EQ(qos[1].netdev(), "eth0");
  EXPECT_EQ(qos[1].rdma_device(), "rxe0");
}

// Every value the node gave, in the API's terms: priority lists, trust as
// mlx5 derives it from the app table, the DCB attributes as the driver
// reports them; nothing listed as unread.
TEST(ObserveQos, CarriesEveryValueTheNodeGave) {
  const roced::v1::InterfaceQos q = ToInterfaceQos({0, "ens1f0", "mlx5_0", 1}, LosslessPrio3());
  EXPECT_THAT(q.unread(), ::testing::IsEmpty());
  EXPECT_EQ(q.mtu(), 9000u);
  EXPECT_TRUE(q.dcbx_host());
  EXPECT_EQ(q.trust(), roced::v1::TRUST_DSCP);
  EXPECT_EQ(q.dscp().dscp_to_priority().at(26), 3u);
  EXPECT_EQ(q.dscp().dscp_to_priority().at(48), 6u);
  EXPECT_THAT(q.pfc().priorities(), ElementsAre(3));
  EXPECT_EQ(q.pfc().delay(), 7u);
  EXPECT_EQ(q.pfc().capability(), 8u);
  EXPECT_THAT(q.ets().priority_to_tc(), ElementsAre(0, 0, 0, 1, 0, 0, 0, 0));
  EXPECT_THAT(q.ets().tc_bandwidth(), ElementsAre(50, 50, 0, 0, 0, 0, 0, 0));
  EXPECT_THAT(q.ets().tsa(), ElementsAre(2, 2, 0, 0, 0, 0, 0, 0));
  EXPECT_TRUE(q.has_ets_willing());
  EXPECT_FALSE(q.ets_willing());
  EXPECT_THAT(q.buffers().priority_to_buffer(), ElementsAre(0, 0, 0, 1, 0, 0, 0, 0));
  EXPECT_EQ(q.buffers().size_bytes(0), 130944u);
  EXPECT_EQ(q.buffer_total_bytes(), 1048576u);
  EXPECT_EQ(q.pfc_prevention_ms(), 100u);
  EXPECT_THAT(q.ecn_np().priorities(), ElementsAre(3));
  EXPECT_THAT(q.ecn_rp().priorities(), ElementsAre(3));
  EXPECT_EQ(q.dcqcn().at("cnp_dscp"), 48u);
  EXPECT_EQ(q.roce_mode(), roced::v1::ROCE_MODE_V2);
  EXPECT_EQ(q.roce_tos(), 106u);
}

// An empty app table is PCP trust; PFC on no priority is an empty list,
// not an unread PFC.
TEST(ObserveQos, EmptyAppTableIsPcpTrustAndPfcOffIsAnEmptyList) {
  InterfaceObserved o;
  o.dscp = DscpMap{};
  o.pfc = Pfc{0, 0};
  const roced::v1::InterfaceQos q = ToInterfaceQos({0, "ens1f1", "mlx5_1", 1}, o);
  EXPECT_EQ(q.trust(), roced::v1::TRUST_PCP);
  EXPECT_TRUE(q.has_dscp());
  EXPECT_TRUE(q.has_pfc());
  EXPECT_THAT(q.pfc().priorities(), ::testing::IsEmpty());
  EXPECT_THAT(q.unread(), ElementsAre("mtu", "ets", "buffers", "dcbx", "pfc_prevention", "ecn_np", "ecn_rp",
                                      "dcqcn", "roce_mode", "roce_tos"));
}

// A netdev without DCB (veth, virtio, rxe's parent) is one "dcb" entry, and
// no trust is claimed for it.
TEST(ObserveQos, NoDcbIsOneUnreadEntryAndNoTrust) {
  InterfaceObserved o;
  o.mtu = 1500;
  const roced::v1::InterfaceQos q = ToInterfaceQos({0, "eth0", "rxe0", 1}, o);
  EXPECT_EQ(q.trust(), roced::v1::TRUST_UNSPECIFIED);
  EXPECT_FALSE(q.has_dscp());
  EXPECT_FALSE(q.has_pfc());
  EXPECT_FALSE(q.has_ets());
  EXPECT_THAT(q.unread(), ElementsAre("dcb", "pfc_prevention", "ecn_np", "ecn_rp", "dcqcn", "roce_mode", "roce_tos"));
}

}  // namespace
}  // namespace roced::reconcile

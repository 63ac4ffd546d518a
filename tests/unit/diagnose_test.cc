// The diagnosis checks on constructed inputs: each misalignment from the
// field guides gives its finding (and the aligned node gives none), so a
// check that stops seeing its problem fails here.
#include "diagnose/checks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace roced::diagnose {
namespace {

using ::testing::HasSubstr;

// One dual-port-less RoCE NIC, aligned the way lossless-prio3.yaml sets it
// up: ToS 106 (DSCP 26) -> priority 3, PFC and ECN on 3, RoCE v2, MTU 4200.
Inputs Aligned() {
  Inputs in;
  auto* dev = in.state.add_devices();
  dev->set_name("mlx5_0");
  dev->set_pci_address("0000:3b:00.0");
  dev->mutable_pcie()->set_current_width(16);
  dev->mutable_pcie()->set_max_width(16);
  dev->mutable_pcie()->set_current_speed_gts(16);
  dev->mutable_pcie()->set_max_speed_gts(16);
  auto* port = dev->add_ports();
  port->set_number(1);
  port->set_state(roced::v1::PORT_STATE_ACTIVE);
  port->set_link_layer("Ethernet");
  port->set_netdev("eth0");
  port->set_netdev_mtu(4200);
  port->set_active_mtu(4096);
  auto* gid = port->add_gids();
  gid->set_index(3);
  gid->set_type(roced::v1::GID_TYPE_ROCE_V2);
  gid->set_ip_address("10.0.0.11");
  reconcile::InterfaceObserved obs;
  obs.mtu = 4200;
  obs.dscp = reconcile::DscpMap{{26, 3}, {48, 6}};
  obs.pfc = reconcile::Pfc{0x08, 0};
  obs.ecn_np = 0x08;
  obs.ecn_rp = 0x08;
  obs.roce_mode = roced::v1::ROCE_MODE_V2;
  obs.roce_tos = 106;
  in.netdevs["eth0"] = obs;
  in.hugepages = {{2048, 1024}, {1048576, 0}};
  return in;
}

std::vector<roced::v1::Finding> RunAll(const Inputs& in) {
  auto f = diagnose::Run(in, {});
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *f : std::vector<roced::v1::Finding>{};
}

std::vector<roced::v1::Finding> Of(const std::vector<roced::v1::Finding>& all, const std::string& check) {
  std::vector<roced::v1::Finding> out;
  for (const auto& f : all) {
    if (f.check() == check) out.push_back(f);
  }
  return out;
}

TEST(Diagnose, AnAlignedNodeHasNoFindings) {
  auto findings = RunAll(Aligned());
  for (const auto& f : findings) ADD_FAILURE() << f.check() << ": " << f.summary();
}

TEST(Diagnose, RoceDscpClassifiedAwayFromThePfcPriorityIsAnError) {
  Inputs in = Aligned();
  in.netdevs["eth0"].pfc = reconcile::Pfc{0x10, 0};  // PFC on 4, DSCP 26 -> 3
  auto f = Of(RunAll(in), "pfc_dscp");
  ASSERT_GE(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_ERROR);
  EXPECT_EQ(f[0].object(), "eth0");
  EXPECT_THAT(f[0].summary(), HasSubstr("ToS 106 = DSCP 26"));
  EXPECT_THAT(f[0].summary(), HasSubstr("priority 3, but PFC is on [4]"));
  EXPECT_THAT(f[0].remedy(), HasSubstr("dscp_to_priority: {26: 4}"));
  // And priority 4 carries nothing: no DSCP maps to it.
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[1].severity(), roced::v1::SEVERITY_WARNING);
  EXPECT_THAT(f[1].summary(), HasSubstr("priority 4 but no DSCP maps to it"));
}

TEST(Diagnose, AnUnmappedRoceDscpFallsToTheNicDefaultPriority) {
  Inputs in = Aligned();
  in.netdevs["eth0"].roce_tos = 138;  // DSCP 34, unmapped -> 34/8 = 4
  auto f = Of(RunAll(in), "pfc_dscp");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_ERROR);
  EXPECT_THAT(f[0].summary(), HasSubstr("DSCP 34) is classified to priority 4"));
  EXPECT_THAT(f[0].detail(), HasSubstr("NIC's default"));
}

TEST(Diagnose, TheConfigsToSIsUsedWhenRdmaCmHasNone) {
  Inputs in = Aligned();
  in.netdevs["eth0"].roce_tos = std::nullopt;  // no rdma_cm configfs
  EXPECT_TRUE(Of(RunAll(in), "pfc_dscp").empty()) << "no ToS known: nothing to compare";
  auto* iface = in.state.mutable_config()->mutable_desired()->add_interfaces();
  iface->mutable_match()->set_netdev("eth0");
  iface->mutable_roce()->set_default_tos(34 << 2);
  auto f = Of(RunAll(in), "pfc_dscp");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f[0].summary(), HasSubstr("ToS 136 = DSCP 34"));
}

TEST(Diagnose, PfcWithPcpTrustAndNoPfcAtAll) {
  Inputs in = Aligned();
  in.netdevs["eth0"].dscp = reconcile::DscpMap{};  // PCP trust
  auto f = Of(RunAll(in), "pfc_dscp");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_WARNING);
  EXPECT_THAT(f[0].summary(), HasSubstr("trusts PCP"));
  in.netdevs["eth0"].pfc = reconcile::Pfc{0, 0};
  f = Of(RunAll(in), "pfc_dscp");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_INFO);
  EXPECT_THAT(f[0].summary(), HasSubstr("PFC is off on every priority"));
  EXPECT_TRUE(Of(RunAll(in), "ecn").empty()) << "ECN is judged against PFC priorities only";
}

TEST(Diagnose, NoDcbIsANoteNotAnError) {
  Inputs in = Aligned();
  in.netdevs["eth0"].pfc.reset();
  in.netdevs["eth0"].dscp.reset();
  auto f = Of(RunAll(in), "pfc_dscp");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_INFO);
  EXPECT_THAT(f[0].summary(), HasSubstr("no DCB support"));
}

TEST(Diagnose, EcnOffOnTheLosslessPriority) {
  Inputs in = Aligned();
  in.netdevs["eth0"].ecn_np = 0x00;
  auto f = Of(RunAll(in), "ecn");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_WARNING);
  EXPECT_THAT(f[0].summary(), HasSubstr("notification point is off on PFC priority [3]"));
  in.netdevs["eth0"].ecn_rp = 0x01;  // on, but on the wrong priority
  f = Of(RunAll(in), "ecn");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_THAT(f[1].summary(), HasSubstr("reaction point is off on PFC priority [3]"));
  in.netdevs["eth0"].ecn_np.reset();  // no ECN controls visible: not judged
  in.netdevs["eth0"].ecn_rp.reset();
  EXPECT_TRUE(Of(RunAll(in), "ecn").empty());
}

TEST(Diagnose, RoceV1DefaultAndMissingV2Gid) {
  Inputs in = Aligned();
  in.netdevs["eth0"].roce_mode = roced::v1::ROCE_MODE_V1;
  auto f = Of(RunAll(in), "roce_mode");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_WARNING);

  auto* port = in.state.mutable_devices(0)->mutable_ports(0);
  port->mutable_gids(0)->set_ip_address("fe80::1");  // link-local only
  f = Of(RunAll(in), "roce_v2_gid");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_ERROR);
  EXPECT_EQ(f[0].object(), "mlx5_0/1 (eth0)");
  port->mutable_gids(0)->set_ip_address("10.0.0.11");
  port->mutable_gids(0)->set_type(roced::v1::GID_TYPE_ROCE_V1);
  EXPECT_EQ(Of(RunAll(in), "roce_v2_gid").size(), 1u);
}

TEST(Diagnose, PortDownIsAnErrorAndSilencesTheGidCheck) {
  Inputs in = Aligned();
  auto* port = in.state.mutable_devices(0)->mutable_ports(0);
  port->set_state(roced::v1::PORT_STATE_DOWN);
  port->clear_gids();
  auto all = RunAll(in);
  auto f = Of(all, "port_state");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_ERROR);
  EXPECT_THAT(f[0].summary(), HasSubstr("DOWN"));
  EXPECT_TRUE(Of(all, "roce_v2_gid").empty());
}

TEST(Diagnose, SmallRoceMtuNarrowPcieNoHugepagesAndMemlock) {
  Inputs in = Aligned();
  auto* dev = in.state.mutable_devices(0);
  dev->mutable_ports(0)->set_active_mtu(1024);
  in.netdevs["eth0"].mtu = 1500;
  dev->mutable_pcie()->set_current_width(4);
  dev->mutable_pcie()->set_current_speed_gts(8);
  dev->mutable_pcie()->set_max_speed_gts(8);
  dev->mutable_pcie()->set_degraded(true);
  in.hugepages = {{2048, 0}, {1048576, 0}};
  in.memlock_bytes = 8 << 20;
  auto all = RunAll(in);
  auto mtu = Of(all, "mtu");
  ASSERT_EQ(mtu.size(), 1u);
  EXPECT_THAT(mtu[0].summary(), HasSubstr("RoCE MTU is 1024 (netdev MTU 1500)"));
  auto pcie = Of(all, "pcie");
  ASSERT_EQ(pcie.size(), 1u);
  EXPECT_THAT(pcie[0].summary(), HasSubstr("x4 8 GT/s; the device supports x16 8 GT/s"));
  EXPECT_THAT(pcie[0].detail(), HasSubstr("~32 Gb/s"));  // 4 x 8 GT/s x 128/130
  EXPECT_THAT(pcie[0].detail(), HasSubstr("~126 Gb/s"));
  auto hp = Of(all, "hugepages");
  ASSERT_EQ(hp.size(), 1u);
  EXPECT_THAT(hp[0].detail(), HasSubstr("2Mi, 1Gi"));
  auto ml = Of(all, "memlock");
  ASSERT_EQ(ml.size(), 1u);
  EXPECT_THAT(ml[0].summary(), HasSubstr("8192 KiB"));
}

TEST(Diagnose, FailedProbesAndConfigNotInForce) {
  Inputs in = Aligned();
  auto* p = in.state.add_probes();
  p->set_peer("node2");
  p->set_kind(roced::v1::PROBE_KIND_LATENCY);
  p->set_last_success(false);
  p->set_last_failure_reason("peer_unavailable");
  auto* ok = in.state.add_probes();
  ok->set_peer("node3");
  ok->set_last_success(true);
  in.state.mutable_config()->set_generation(4);
  in.state.mutable_config()->set_converged(false);
  auto* fs = in.state.add_fields();
  fs->set_object("eth0");
  fs->set_field("qos.pfc");
  fs->set_sync(roced::v1::FIELD_SYNC_FAILED);
  fs->set_message("driver refused");
  auto all = RunAll(in);
  auto probes = Of(all, "probes");
  ASSERT_EQ(probes.size(), 1u);
  EXPECT_EQ(probes[0].object(), "node2");
  EXPECT_THAT(probes[0].summary(), HasSubstr("latest latency probe failed: peer_unavailable"));
  auto conv = Of(all, "converged");
  ASSERT_EQ(conv.size(), 1u);
  EXPECT_THAT(conv[0].summary(), HasSubstr("generation 4"));
  EXPECT_THAT(conv[0].detail(), HasSubstr("eth0 qos.pfc: FAILED (driver refused)"));
}

TEST(Diagnose, OnlyTheNamedChecksRunAndUnknownNamesAreRejected) {
  Inputs in = Aligned();
  in.netdevs["eth0"].ecn_np = 0;
  in.memlock_bytes = 1 << 20;
  auto only = diagnose::Run(in, {"memlock"});
  ASSERT_TRUE(only.ok());
  ASSERT_EQ(only->size(), 1u);
  EXPECT_EQ((*only)[0].check(), "memlock");
  auto bad = diagnose::Run(in, {"pfc", "memlock"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("unknown check 'pfc'; known: port_state"));
}

TEST(Diagnose, ErrorsComeFirst) {
  Inputs in = Aligned();
  in.memlock_bytes = 1 << 20;                         // warning (check order: late)
  in.netdevs["eth0"].pfc = reconcile::Pfc{0x10, 0};   // error
  in.hugepages = {{2048, 0}};                          // info
  auto all = RunAll(in);
  ASSERT_GE(all.size(), 3u);
  for (size_t i = 1; i < all.size(); ++i) EXPECT_GE(all[i - 1].severity(), all[i].severity());
  EXPECT_EQ(all.front().severity(), roced::v1::SEVERITY_ERROR);
}

}  // namespace
}  // namespace roced::diagnose

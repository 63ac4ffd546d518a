// The diagnosis checks on constructed inputs: each misalignment from the
// field guides gives its finding (and the aligned node gives none), so a
// check that stops seeing its problem fails here.
#include "diagnose/checks.h"

#include "probe/baseline.h"
#include <linux/neighbour.h>
#include <sys/timex.h>

#include <filesystem>
#include <set>

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
  // A two-socket host with everything the NIC uses on its node 0, a peer
  // whose data IP is resolved, one RoCE netdev (no ARP flux possible), and
  // a synchronised clock.
  dev->set_numa_node(0);
  in.numa_cpus = {{0, {0, 1, 2, 3}}, {1, {4, 5, 6, 7}}};
  in.allowed_cpus = {0, 1, 2, 3, 4, 5, 6, 7};
  in.numa_hugepages = {{0, {{2048, 512}}}, {1, {{2048, 512}}}};
  in.device_irqs["mlx5_0"] = {{40, {0}}, {41, {1, 2}}, {42, {0, 1, 2, 3, 4, 5, 6, 7}}};
  in.addresses["eth0"] = {hal::IpAddress{"10.0.0.11", 24, false}, hal::IpAddress{"fe80::1", 64, true}};
  in.neighbours["eth0"] = {hal::Neighbour{"10.0.0.12", NUD_REACHABLE, "02:00:00:00:00:12"}};
  auto* probe = in.state.add_probes();
  probe->set_peer("node2");
  probe->set_kind(roced::v1::PROBE_KIND_LATENCY);
  probe->set_last_success(true);
  probe->set_peer_data_ip("10.0.0.12");
  in.arp_sysctls["eth0"] = hal::ArpSysctls{0, 0, 0};
  in.arp_sysctls_all = hal::ArpSysctls{0, 0, 0};
  in.clock = hal::KernelClock{TIME_OK, STA_PLL | STA_NANO, 2000, 150, 4000};
  in.ptp_clocks = {hal::PtpClock{"ptp0", "mlx5_ptp"}};
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

// An aligned node skips only the checks whose inputs Aligned() does not
// give (congestion counters, carrier history, probe baselines).
TEST(Diagnose, AnAlignedNodeSkipsOnlyWhatItHasNoInputsFor) {
  std::vector<diagnose::SkippedCheck> skipped;
  ASSERT_TRUE(diagnose::Run(Aligned(), {}, &skipped).ok());
  std::set<std::string> names;
  for (const auto& k : skipped) names.insert(k.check);
  EXPECT_EQ(names, (std::set<std::string>{"pause_without_ecn", "link_flaps", "probe_baseline"}));
}

// A check with nothing to look at is skipped with why, not passed: without
// the kernel state of any RoCE netdev (a fixture tree, DCB unreadable) the
// QoS checks; without anything at all, all but the two that always have
// their inputs (memlock, converged).
TEST(Diagnose, ChecksWithoutTheirInputsAreSkippedWithWhy) {
  Inputs in = Aligned();
  in.netdevs.clear();
  std::vector<diagnose::SkippedCheck> skipped;
  auto f = diagnose::Run(in, {"pfc_dscp", "ecn", "memlock"}, &skipped);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].check, "pfc_dscp");
  EXPECT_EQ(skipped[1].check, "ecn");
  EXPECT_THAT(skipped[0].reason, HasSubstr("of no RoCE netdev could be read"));

  skipped.clear();
  f = diagnose::Run(Inputs{}, {}, &skipped);
  ASSERT_TRUE(f.ok()) << f.status();
  std::set<std::string> names;
  for (const auto& k : skipped) {
    names.insert(k.check);
    EXPECT_FALSE(k.reason.empty()) << k.check;
  }
  EXPECT_EQ(names.size(), diagnose::Checks().size() - 2);
  EXPECT_FALSE(names.count("memlock"));
  EXPECT_FALSE(names.count("converged"));
}

// Every check is one file of lib/diagnose/checks/ named after it, and says
// what it reads and the rule it holds the node to; no two share a name.
TEST(Diagnose, EachCheckIsOneFileWithItsInputsAndRule) {
  std::set<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(std::string(ROCED_SOURCE_DIR) + "/lib/diagnose/checks")) {
    files.insert(e.path().stem().string());
  }
  std::set<std::string> names;
  for (const auto& c : diagnose::Checks()) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    EXPECT_TRUE(files.count(c.name)) << c.name << " has no file lib/diagnose/checks/" << c.name << ".cc";
    EXPECT_GT(std::string(c.description).size(), 10u) << c.name;
    EXPECT_GT(std::string(c.inputs).size(), 5u) << c.name;
    EXPECT_GT(std::string(c.rule).size(), 20u) << c.name;
  }
  EXPECT_EQ(names, files) << "a file under lib/diagnose/checks/ that Checks() does not list, or the other way";
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

TEST(Diagnose, FirmwareDcbxIsAWarningWhereTheConfigSetsDcbAndANoteElsewhere) {
  Inputs in = Aligned();
  EXPECT_TRUE(Of(RunAll(in), "dcbx_mode").empty()) << "no mode reported: nothing to say";
  in.netdevs["eth0"].dcbx_host = true;
  EXPECT_TRUE(Of(RunAll(in), "dcbx_mode").empty());
  in.netdevs["eth0"].dcbx_host = false;
  auto f = Of(RunAll(in), "dcbx_mode");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_INFO);
  EXPECT_THAT(f[0].summary(), HasSubstr("DCB is owned by the NIC's firmware or an LLDP agent"));
  auto* iface = in.state.mutable_config()->mutable_desired()->add_interfaces();
  iface->mutable_match()->set_netdev("eth0");
  iface->mutable_qos()->mutable_pfc()->add_priorities(3);
  f = Of(RunAll(in), "dcbx_mode");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_WARNING);
  EXPECT_THAT(f[0].remedy(), HasSubstr("qos.dcbx_mode: host"));
  iface->mutable_qos()->set_dcbx_mode(roced::v1::DCBX_MODE_HOST);
  EXPECT_TRUE(Of(RunAll(in), "dcbx_mode").empty()) << "the reconciler takes host mode";
}

// The remedy is the port's driver's: ice's private flag, bnxt_en's NVM; a
// config asking for host mode does not silence it where setdcbx cannot
// take it.
TEST(Diagnose, FirmwareAgentRemedyIsTheDriversOwn) {
  Inputs in = Aligned();
  in.netdevs["eth0"].dcbx_host = false;
  auto* iface = in.state.mutable_config()->mutable_desired()->add_interfaces();
  iface->mutable_match()->set_netdev("eth0");
  iface->mutable_qos()->set_dcbx_mode(roced::v1::DCBX_MODE_HOST);
  iface->mutable_qos()->mutable_pfc()->add_priorities(3);
  in.netdevs["eth0"].driver = "mlx5_core";
  EXPECT_TRUE(Of(RunAll(in), "dcbx_mode").empty()) << "mlx5: the reconciler takes host mode";
  in.netdevs["eth0"].driver = "ice";
  auto f = Of(RunAll(in), "dcbx_mode");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_WARNING);
  EXPECT_THAT(f[0].summary(), HasSubstr("fw-lldp-agent"));
  EXPECT_EQ(f[0].remedy(), "ethtool --set-priv-flags eth0 fw-lldp-agent off");
  in.netdevs["eth0"].driver = "bnxt_en";
  f = Of(RunAll(in), "dcbx_mode");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f[0].remedy(), HasSubstr("NVM"));
  EXPECT_THAT(f[0].remedy(), HasSubstr("reload bnxt_en"));
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

// The aligned node's switch: PFC on 3, DSCP 26 -> 3, jumbo frames, heard by
// a running LLDP listener.
Inputs WithSwitch() {
  Inputs in = Aligned();
  auto* lldp = in.state.mutable_agent()->add_components();
  lldp->set_name("lldp");
  lldp->set_healthy(true);
  auto* n = in.state.add_lldp_neighbors();
  n->set_netdev("eth0");
  n->set_chassis_id("02:00:00:00:00:aa");
  n->set_port_id("Ethernet12");
  n->set_system_name("tor1");
  n->set_max_frame_size(9216);
  n->mutable_pfc()->set_enabled(0x08);
  auto* app = n->add_apps();
  app->set_selector(5);
  app->set_protocol(26);
  app->set_priority(3);
  return in;
}

TEST(Diagnose, SwitchAlignmentIsSilentWhenBothSidesAgreeOrNoListenerRuns) {
  EXPECT_TRUE(Of(RunAll(WithSwitch()), "switch_alignment").empty());
  Inputs no_listener = Aligned();  // a fixture tree: nothing to say
  EXPECT_TRUE(Of(RunAll(no_listener), "switch_alignment").empty());
}

TEST(Diagnose, SwitchWithPfcOnAnotherPriorityIsAnErrorNamingBothSides) {
  Inputs in = WithSwitch();
  in.state.mutable_lldp_neighbors(0)->mutable_pfc()->set_enabled(0x10);
  auto f = Of(RunAll(in), "switch_alignment");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_ERROR);
  EXPECT_EQ(f[0].object(), "eth0");
  EXPECT_THAT(f[0].summary(),
              HasSubstr("RoCE (DSCP 26, priority 3) is lossless on the host but not on the switch tor1 port Ethernet12"));
  EXPECT_THAT(f[0].detail(), HasSubstr("host PFC [3], switch PFC [4]"));
  EXPECT_EQ(f[1].severity(), roced::v1::SEVERITY_WARNING);
  EXPECT_THAT(f[1].summary(), HasSubstr("PFC priorities differ: host [3], switch tor1 port Ethernet12 [4]"));
  // The reverse: the switch lossless on RoCE's priority, the host not.
  Inputs reverse = WithSwitch();
  reverse.netdevs["eth0"].pfc = reconcile::Pfc{0x00, 0};
  auto r = Of(RunAll(reverse), "switch_alignment");
  ASSERT_FALSE(r.empty());
  EXPECT_THAT(r[0].summary(), HasSubstr("is lossless on the switch tor1 port Ethernet12 but not on the host"));
}

TEST(Diagnose, SwitchMappingRoceDscpToAnotherPriorityIsAnError) {
  Inputs in = WithSwitch();
  in.state.mutable_lldp_neighbors(0)->mutable_apps(0)->set_priority(4);
  auto f = Of(RunAll(in), "switch_alignment");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_ERROR);
  EXPECT_THAT(f[0].summary(), HasSubstr("RoCE's DSCP 26 is priority 3 on the host but priority 4 on the switch tor1"));
}

TEST(Diagnose, SwitchFrameSizeBelowTheHostMtuIsAnError) {
  Inputs in = WithSwitch();
  in.state.mutable_lldp_neighbors(0)->set_max_frame_size(4217);  // 4200 + 18 needed
  auto f = Of(RunAll(in), "switch_alignment");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_ERROR);
  EXPECT_THAT(f[0].summary(), HasSubstr("takes frames of at most 4217 bytes; the host MTU 4200 needs 4218"));
  in.state.mutable_lldp_neighbors(0)->set_max_frame_size(4218);
  EXPECT_TRUE(Of(RunAll(in), "switch_alignment").empty());
}

TEST(Diagnose, NoLldpHeardOrNotListeningIsANote) {
  Inputs in = WithSwitch();
  in.state.clear_lldp_neighbors();
  auto f = Of(RunAll(in), "switch_alignment");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_INFO);
  EXPECT_EQ(f[0].summary(), "no LLDP heard from the switch");
  auto* comp = in.state.mutable_agent()->mutable_components(0);
  comp->set_healthy(false);
  comp->set_message("cannot listen for LLDP on eth0: open an AF_PACKET socket: Operation not permitted; eth1: x");
  f = Of(RunAll(in), "switch_alignment");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].summary(), "not listening for LLDP");
  EXPECT_EQ(f[0].detail(), "open an AF_PACKET socket: Operation not permitted");
}

TEST(Diagnose, WillingPortWithAStaticQosConfigIsAWarning) {
  Inputs in = WithSwitch();
  in.netdevs["eth0"].dcb_willing = true;
  EXPECT_TRUE(Of(RunAll(in), "switch_alignment").empty());  // no config sets QoS
  auto* iface = in.state.mutable_config()->mutable_desired()->add_interfaces();
  iface->mutable_match()->set_netdev("eth0");
  iface->mutable_qos()->mutable_pfc()->add_priorities(3);
  auto f = Of(RunAll(in), "switch_alignment");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_WARNING);
  EXPECT_THAT(f[0].summary(), HasSubstr("the port is willing"));
  in.netdevs["eth0"].dcb_willing = false;
  EXPECT_TRUE(Of(RunAll(in), "switch_alignment").empty());
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

// pause_without_ecn: a window over which priority 3 paused 52000 times.
metrics::CongestionWindow PausingWindow() {
  metrics::CongestionWindow w;
  w.min_span = absl::Seconds(60);
  w.sampled_for = absl::Minutes(5);
  metrics::CongestionSample a, b;
  a.at = absl::UnixEpoch() + absl::Hours(1);
  b.at = a.at + absl::Seconds(90);
  a.netdevs["eth0"] = {{{3, 100}}, 50, 10, 10};
  b.netdevs["eth0"] = {{{3, 52100}}, 50, 10, 10};
  w.start = a;
  w.end = b;
  return w;
}

TEST(Diagnose, PausesRisingWhileEcnMarksAndCnpsStayFlatIsAWarning) {
  Inputs in = Aligned();
  in.congestion = PausingWindow();
  auto f = Of(RunAll(in), "pause_without_ecn");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_WARNING);
  EXPECT_EQ(f[0].object(), "eth0");
  EXPECT_THAT(f[0].summary(), HasSubstr("priority 3 rose by 52000 in 1m30s while ECN marks and CNPs stayed flat"));
  EXPECT_THAT(f[0].detail(), HasSubstr("pause frames (received + sent) 100 -> 52100"));
  EXPECT_THAT(f[0].detail(), HasSubstr("ECN-marked packets 50 -> 50, CNPs sent 10 -> 10, CNPs handled 10 -> 10"));
  EXPECT_THAT(f[0].remedy(), HasSubstr("np_priorities: [3]"));
}

TEST(Diagnose, PausesWithEcnWorkingOrFewPausesAreNotFindings) {
  Inputs in = Aligned();
  in.congestion = PausingWindow();
  in.congestion->end.netdevs["eth0"].cnp_handled = 11;  // the senders were told to slow down
  EXPECT_TRUE(Of(RunAll(in), "pause_without_ecn").empty());
  in.congestion = PausingWindow();
  in.congestion->end.netdevs["eth0"].pause_frames[3] = 1100;  // +1000: a burst's start
  EXPECT_TRUE(Of(RunAll(in), "pause_without_ecn").empty());
  in.congestion = PausingWindow();
  in.congestion->start->netdevs["eth0"].ecn_marked.reset();  // no ECN counters (rxe): not judged
  in.congestion->start->netdevs["eth0"].cnp_sent.reset();
  in.congestion->start->netdevs["eth0"].cnp_handled.reset();
  EXPECT_TRUE(Of(RunAll(in), "pause_without_ecn").empty());
}

TEST(Diagnose, NoCounterWindowYetIsANote) {
  Inputs in = Aligned();
  in.congestion = PausingWindow();
  in.congestion->start.reset();
  in.congestion->sampled_for = absl::Seconds(20);
  auto f = Of(RunAll(in), "pause_without_ecn");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_INFO);
  EXPECT_THAT(f[0].summary(), HasSubstr("no counter window yet"));
  EXPECT_THAT(f[0].detail(), HasSubstr("sampled for 20s; the check compares samples at least 1m apart"));
}

metrics::LinkFlaps Flaps(size_t changes) {
  metrics::LinkFlaps f;
  f.netdev = "eth0";
  f.changes = changes;
  f.window = absl::Hours(6);
  f.as_of = absl::FromUnixSeconds(1764633600);  // 2025-12-02 00:00:00 UTC
  f.last_change = f.as_of - absl::Minutes(42);
  f.carrier_changes = 31;
  f.watched_since = f.as_of - absl::Hours(30);
  return f;
}

TEST(Diagnose, MoreThanThreeCarrierChangesInSixHoursAreLinkFlaps) {
  Inputs in = Aligned();
  in.link_flaps = {Flaps(4)};
  auto f = Of(RunAll(in), "link_flaps");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_WARNING);
  EXPECT_EQ(f[0].object(), "eth0");
  EXPECT_THAT(f[0].summary(), HasSubstr("4 carrier changes in the last 6h (last at 2025-12-01 23:18:00 UTC, 42m ago)"));
  EXPECT_THAT(f[0].detail(), HasSubstr("31 carrier changes since the netdev was created"));
  EXPECT_THAT(f[0].remedy(), HasSubstr("ethtool -m eth0"));
}

TEST(Diagnose, ThreeCarrierChangesAreNotLinkFlaps) {
  Inputs in = Aligned();
  in.link_flaps = {Flaps(3)};
  EXPECT_TRUE(Of(RunAll(in), "link_flaps").empty());
}

// probe_baseline: latency to node2 under firmware A, then under B.
Inputs WithBaselines(double p50_before, double p50_after, double gbps_before, double gbps_after) {
  Inputs in = Aligned();
  probe::ProbeBaselineStore store("");
  const probe::DeviceVersion a{"mlx5_core", "kernel 6.1.0", "22.31.1014"};
  const probe::DeviceVersion b{"mlx5_core", "kernel 6.1.0", "22.36.1010"};
  absl::Time t = absl::UnixEpoch() + absl::Hours(1000);
  auto add = [&](const probe::DeviceVersion& v, double p50, double gbps) {
    roced::v1::ProbeResult lat;
    lat.set_peer("node2");
    lat.set_device("mlx5_0");
    lat.set_kind(roced::v1::PROBE_KIND_LATENCY);
    lat.set_size(8);
    lat.set_success(true);
    lat.mutable_latency()->set_p50_us(p50);
    lat.mutable_latency()->set_p99_us(p50 * 2);
    store.Add(lat, v, t += absl::Minutes(1));
    roced::v1::ProbeResult bw = lat;
    bw.set_kind(roced::v1::PROBE_KIND_BANDWIDTH);
    bw.set_size(65536);
    bw.mutable_bandwidth()->set_gbps(gbps);
    store.Add(bw, v, t);
  };
  for (int i = 0; i < 5; ++i) add(a, p50_before, gbps_before);
  for (int i = 0; i < 3; ++i) add(b, p50_after, gbps_after);
  in.probe_baselines = store.Snapshot();
  return in;
}

TEST(Diagnose, ProbeFiguresWorseAfterAFirmwareChangeNamePeerVersionsAndFigures) {
  auto f = Of(RunAll(WithBaselines(2.0, 2.6, 90, 75)), "probe_baseline");
  ASSERT_EQ(f.size(), 2u);  // p50 +30%, bandwidth -17%; p99 +30% is within its +50%
  EXPECT_EQ(f[0].object(), "node2");
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_WARNING);
  EXPECT_THAT(f[0].summary(), HasSubstr("latency p50 to node2 rose 30% since the driver/firmware changed: 2.00 -> 2.60 us"));
  EXPECT_THAT(f[0].detail(), HasSubstr("latency probes (size 8) from mlx5_0, median of the last 3 results under "
                                       "mlx5_core kernel 6.1.0, firmware 22.36.1010 vs 5 under mlx5_core kernel "
                                       "6.1.0, firmware 22.31.1014"));
  EXPECT_THAT(f[1].summary(), HasSubstr("bandwidth to node2 fell 17% since the driver/firmware changed: 90.00 -> 75.00 Gb/s"));
}

TEST(Diagnose, ProbeFiguresWithinTheThresholdsAreNotFindings) {
  EXPECT_TRUE(Of(RunAll(WithBaselines(2.0, 2.3, 90, 82)), "probe_baseline").empty());  // +15%, -9%
  // Better after the upgrade: nothing either.
  EXPECT_TRUE(Of(RunAll(WithBaselines(2.0, 1.5, 90, 99)), "probe_baseline").empty());
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

constexpr char kMlx50[] = "mlx5_0 (0000:3b:00.0, NUMA node 0)";

TEST(Diagnose, HugepagesOnlyOnAnotherNumaNodeThanTheNicAreAWarning) {
  Inputs in = Aligned();
  in.numa_hugepages = {{0, {{2048, 0}, {1048576, 0}}}, {1, {{2048, 1024}, {1048576, 0}}}};
  auto f = Of(RunAll(in), "numa_locality");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_WARNING);
  EXPECT_EQ(f[0].object(), kMlx50);
  EXPECT_THAT(f[0].summary(), HasSubstr("only on other NUMA nodes, none on the NIC's node 0"));
  EXPECT_THAT(f[0].detail(), HasSubstr("node 1: 1024 x 2048 kB"));
  EXPECT_THAT(f[0].remedy(), HasSubstr("{size: 2Mi, count: 1024, numa_node: 0}"));
  in.numa_hugepages[0][1048576] = 1;  // one local page of any size: local
  EXPECT_TRUE(Of(RunAll(in), "numa_locality").empty());
}

TEST(Diagnose, AgentCpusAllOnAnotherNumaNodeAreAWarning) {
  Inputs in = Aligned();
  in.allowed_cpus = {4, 5, 6, 7};
  auto f = Of(RunAll(in), "numa_locality");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_WARNING);
  EXPECT_THAT(f[0].summary(), HasSubstr("only on CPUs 4-7 (NUMA node 1), none on the NIC's node 0 (CPUs 0-3)"));
  EXPECT_THAT(f[0].remedy(), HasSubstr("--cpunodebind=0"));
  in.allowed_cpus = {3, 4};  // one CPU on the NIC's node is enough
  EXPECT_TRUE(Of(RunAll(in), "numa_locality").empty());
}

TEST(Diagnose, NicIrqsPinnedToAnotherNumaNodeAreAWarning) {
  Inputs in = Aligned();
  in.device_irqs["mlx5_0"][40] = {4, 5};
  in.device_irqs["mlx5_0"][43] = {7};
  auto f = Of(RunAll(in), "numa_locality");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_WARNING);
  EXPECT_THAT(f[0].summary(), HasSubstr("2 of 4 IRQs are pinned to CPUs off the NIC's NUMA node 0"));
  EXPECT_THAT(f[0].detail(), HasSubstr("40 -> CPUs 4-5 (node 1); 43 -> CPUs 7 (node 1)"));
  EXPECT_THAT(f[0].remedy(), HasSubstr("node 0's CPUs 0-3"));
  in.device_irqs["mlx5_0"][40] = {3, 4};
  in.device_irqs["mlx5_0"][43] = {0};
  EXPECT_TRUE(Of(RunAll(in), "numa_locality").empty());
}

TEST(Diagnose, ProbeBuffersNotBoundToTheNicsNodeAreAWarning) {
  Inputs in = Aligned();
  EXPECT_TRUE(Of(RunAll(in), "numa_locality").empty());
  in.probe_buffer_binds = {3, 0, "Operation not permitted"};
  auto f = Of(RunAll(in), "numa_locality");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_WARNING);
  EXPECT_EQ(f[0].object(), "probe buffers");
  EXPECT_THAT(f[0].summary(), HasSubstr("3 probe buffer(s) could not be bound to their NIC's NUMA node (last: node 0, "
                                        "Operation not permitted)"));
  EXPECT_THAT(f[0].remedy(), HasSubstr("SystemCallFilter=mbind"));
}

TEST(Diagnose, ProbeBufferBindFailuresAreCountedWithTheLastError) {
  const uint64_t before = probe::BufferBindFailuresSoFar().count;
  probe::RecordBufferBindFailure(1, "Invalid argument");
  probe::RecordBufferBindFailure(0, "Operation not permitted");
  const probe::BufferBindFailures now = probe::BufferBindFailuresSoFar();
  EXPECT_EQ(now.count, before + 2);
  EXPECT_EQ(now.node, 0);
  EXPECT_EQ(now.error, "Operation not permitted");
}

TEST(Diagnose, NoNumaInformationMeansNothingToSayAboutLocality) {
  Inputs in = Aligned();
  in.numa_hugepages = {{1, {{2048, 1024}}}};
  in.allowed_cpus = {4};
  in.device_irqs["mlx5_0"][40] = {5};
  ASSERT_EQ(Of(RunAll(in), "numa_locality").size(), 3u);
  in.state.mutable_devices(0)->set_numa_node(-1);
  EXPECT_TRUE(Of(RunAll(in), "numa_locality").empty());
}

TEST(Diagnose, PeerWithAFailedNeighbourEntryIsAWarning) {
  Inputs in = Aligned();
  in.neighbours["eth0"][0].state = NUD_FAILED;
  in.neighbours["eth0"][0].lladdr.clear();
  auto f = Of(RunAll(in), "neighbours");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_WARNING);
  EXPECT_EQ(f[0].object(), "node2 (10.0.0.12)");
  EXPECT_THAT(f[0].summary(), HasSubstr("the neighbour entry for 10.0.0.12 on eth0 is FAILED"));
  EXPECT_THAT(f[0].remedy(), HasSubstr("ping -I eth0 10.0.0.12"));
  in.neighbours["eth0"][0].state = NUD_INCOMPLETE;
  EXPECT_THAT(Of(RunAll(in), "neighbours").at(0).summary(), HasSubstr("is INCOMPLETE"));
  for (uint16_t resolved : {NUD_STALE, NUD_DELAY, NUD_PROBE, NUD_PERMANENT}) {
    in.neighbours["eth0"][0].state = resolved;
    EXPECT_TRUE(Of(RunAll(in), "neighbours").empty()) << hal::NeighbourStateName(resolved);
  }
}

TEST(Diagnose, PeerWithoutANeighbourEntryIsANoteAndRoutedPeersAreNotJudged) {
  Inputs in = Aligned();
  in.neighbours["eth0"].clear();
  // A configured peer whose gRPC address is on the RoCE subnet counts too;
  // one behind a router (10.1.0.5) or named by host name does not.
  auto* peers = in.state.mutable_config()->mutable_desired()->mutable_probes();
  auto* p3 = peers->add_peers();
  p3->set_name("node3");
  p3->set_address("10.0.0.13:7471");
  auto* p4 = peers->add_peers();
  p4->set_name("node4");
  p4->set_address("10.1.0.5:7471");
  peers->add_peers()->set_address("node5.example:7471");
  auto f = Of(RunAll(in), "neighbours");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_INFO);
  EXPECT_EQ(f[0].object(), "node2 (10.0.0.12)");
  EXPECT_THAT(f[0].summary(), HasSubstr("no neighbour entry for 10.0.0.12 on eth0"));
  EXPECT_EQ(f[1].object(), "node3 (10.0.0.13)");
  in.neighbours.erase("eth0");  // table not read: not judged
  EXPECT_TRUE(Of(RunAll(in), "neighbours").empty());
}

TEST(Diagnose, APeerBehindARouterNeedsTheGatewaysNeighbourEntry) {
  Inputs in = Aligned();
  in.state.mutable_probes(0)->set_peer_data_ip("10.1.0.5");  // node2 sits behind 10.0.0.1
  EXPECT_TRUE(Of(RunAll(in), "neighbours").empty()) << "no route read: routed peers are not judged";
  in.routes["10.1.0.5"] = hal::RouteHop{"eth0", "10.0.0.1"};
  in.neighbours["eth0"].push_back(hal::Neighbour{"10.0.0.1", NUD_FAILED, ""});
  auto f = Of(RunAll(in), "neighbours");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_WARNING);
  EXPECT_EQ(f[0].object(), "node2 (10.1.0.5)");
  EXPECT_THAT(f[0].summary(), HasSubstr("entry for 10.0.0.1 (the gateway to 10.1.0.5) on eth0 is FAILED"));
  EXPECT_THAT(f[0].remedy(), HasSubstr("ping -I eth0 10.0.0.1"));
  in.neighbours["eth0"].back().state = NUD_STALE;
  EXPECT_TRUE(Of(RunAll(in), "neighbours").empty());
  in.routes["10.1.0.5"] = hal::RouteHop{"mgmt0", "192.168.0.1"};  // leaves on a non-RoCE netdev
  EXPECT_TRUE(Of(RunAll(in), "neighbours").empty());
}

// A second RoCE port, eth1 on mlx5_1, in eth0's subnet.
void AddSecondPortInTheSameSubnet(Inputs* in) {
  auto* dev = in->state.add_devices();
  dev->set_name("mlx5_1");
  dev->set_numa_node(0);
  auto* port = dev->add_ports();
  port->set_number(1);
  port->set_state(roced::v1::PORT_STATE_ACTIVE);
  port->set_link_layer("Ethernet");
  port->set_netdev("eth1");
  auto* gid = port->add_gids();
  gid->set_type(roced::v1::GID_TYPE_ROCE_V2);
  gid->set_ip_address("10.0.0.21");
  in->addresses["eth1"] = {hal::IpAddress{"10.0.0.21", 24, false}};
  in->arp_sysctls["eth1"] = hal::ArpSysctls{0, 0, 0};
}

TEST(Diagnose, TwoRoceNetdevsInOneSubnetWithDefaultArpSysctlsAreAWarning) {
  Inputs in = Aligned();
  AddSecondPortInTheSameSubnet(&in);
  auto f = Of(RunAll(in), "arp_flux");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_WARNING);
  EXPECT_EQ(f[0].object(), "eth0, eth1 (10.0.0.0/24)");
  EXPECT_THAT(f[0].summary(), HasSubstr("eth0 and eth1 share subnet 10.0.0.0/24"));
  EXPECT_THAT(f[0].detail(), HasSubstr("eth0: arp_ignore 0, arp_announce 0, rp_filter 0; eth1: arp_ignore 0"));
  EXPECT_THAT(f[0].remedy(), HasSubstr("net.ipv4.conf.eth0.arp_ignore=1 net.ipv4.conf.eth0.arp_announce=2 "
                                       "net.ipv4.conf.eth1.arp_ignore=1"));
  // conf/all counts (the kernel takes the larger), and 2 is as good as 1.
  in.arp_sysctls_all = hal::ArpSysctls{1, 2, 0};
  in.arp_sysctls["eth1"].arp_ignore = 2;
  EXPECT_TRUE(Of(RunAll(in), "arp_flux").empty());
}

TEST(Diagnose, StrictRpFilterOnRoceNetdevsSharingASubnetIsAnError) {
  Inputs in = Aligned();
  AddSecondPortInTheSameSubnet(&in);
  in.arp_sysctls["eth0"] = hal::ArpSysctls{1, 2, 0};
  in.arp_sysctls["eth1"] = hal::ArpSysctls{1, 2, 0};
  in.arp_sysctls_all.rp_filter = 1;
  auto f = Of(RunAll(in), "arp_flux");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_ERROR);
  EXPECT_THAT(f[0].detail(), HasSubstr("(conf/all: 0, 0, 1;"));
  EXPECT_THAT(f[0].detail(), HasSubstr("strict rp_filter drops"));
  EXPECT_THAT(f[0].remedy(), HasSubstr("net.ipv4.conf.eth0.rp_filter=2 net.ipv4.conf.eth1.rp_filter=2"));
  in.arp_sysctls["eth0"].rp_filter = 2;  // loose wins over all's strict
  in.arp_sysctls["eth1"].rp_filter = 2;
  EXPECT_TRUE(Of(RunAll(in), "arp_flux").empty());
  in.addresses["eth1"] = {hal::IpAddress{"10.0.1.21", 24, false}};  // own subnet: no flux
  in.arp_sysctls_all.rp_filter = 1;
  in.arp_sysctls["eth0"] = in.arp_sysctls["eth1"] = hal::ArpSysctls{0, 0, 1};
  EXPECT_TRUE(Of(RunAll(in), "arp_flux").empty());
}

TEST(Diagnose, UnsynchronisedClockIsAWarningAndUnusedPtpClocksToo) {
  Inputs in = Aligned();
  in.clock = hal::KernelClock{TIME_ERROR, STA_UNSYNC, 16000000, 16000000, 0};
  auto f = Of(RunAll(in), "clock_sync");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].severity(), roced::v1::SEVERITY_WARNING);
  EXPECT_EQ(f[0].object(), "system clock");
  EXPECT_THAT(f[0].summary(), HasSubstr("not synchronised"));
  EXPECT_THAT(f[0].detail(), HasSubstr("state 5 (TIME_ERROR), status UNSYNC, maxerror 16000000 us"));
  EXPECT_EQ(f[1].object(), "ptp0 (mlx5_ptp)");
  EXPECT_THAT(f[1].summary(), HasSubstr("PTP hardware clocks are present but nothing synchronises"));
  EXPECT_THAT(f[1].remedy(), HasSubstr("phc2sys"));
  in.ptp_clocks.clear();
  EXPECT_EQ(Of(RunAll(in), "clock_sync").size(), 1u);
  in.clock.reset();  // adjtimex not read
  EXPECT_TRUE(Of(RunAll(in), "clock_sync").empty());
}

TEST(Diagnose, SynchronisedClockWithALargeMaxErrorIsAWarning) {
  Inputs in = Aligned();
  in.clock->max_error_us = 250000;
  auto f = Of(RunAll(in), "clock_sync");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f[0].summary(), HasSubstr("maximum error is 250 ms (bound 100 ms)"));
  in.clock->max_error_us = 100000;
  EXPECT_TRUE(Of(RunAll(in), "clock_sync").empty());
}

}  // namespace
}  // namespace roced::diagnose

#include "tools/rocectl/format.h"
#include "tools/rocectl/apply_cmd.h"
#include "tools/rocectl/commands.h"

#include <yaml-cpp/yaml.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_split.h"
#include "google/protobuf/util/time_util.h"

namespace roced::ctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

roced::v1::NodeState SampleState() {
  roced::v1::NodeState s;
  s.set_hostname("node1");
  auto* d = s.add_devices();
  d->set_name("mlx5_2");
  d->set_pci_address("0000:af:00.0");
  d->mutable_pcie()->set_current_speed_gts(8);
  d->mutable_pcie()->set_current_width(4);
  d->mutable_pcie()->set_max_speed_gts(16);
  d->mutable_pcie()->set_max_width(16);
  d->mutable_pcie()->set_degraded(true);
  auto* p = d->add_ports();
  p->set_number(1);
  p->set_state(roced::v1::PORT_STATE_ACTIVE);
  p->set_link_layer("Ethernet");
  p->set_netdev("ens2f0");
  auto* g = p->add_gids();
  g->set_index(0);
  g->set_type(roced::v1::GID_TYPE_ROCE_V1);
  g->set_gid("fe80:0000:0000:0000:0000:0000:0000:0001");
  return s;
}

// Under -o json a failure is one JSON document (on stdout, so a script
// parses whatever happened), under yaml the same as YAML, under table one
// line for stderr.
TEST(Failure, IsAJsonDocumentUnderJsonAndOneLineUnderTable) {
  const std::string json = FailureText(Output::kJson, "agent not reachable at unix:/x: \"refused\"", kExitFailed,
                                       "UNAVAILABLE");
  YAML::Node doc = YAML::Load(json);
  EXPECT_EQ(doc["error"]["message"].as<std::string>(), "agent not reachable at unix:/x: \"refused\"");
  EXPECT_EQ(doc["error"]["exitCode"].as<int>(), 3);
  EXPECT_EQ(doc["error"]["grpcCode"].as<std::string>(), "UNAVAILABLE");
  EXPECT_EQ(YAML::Load(FailureText(Output::kYaml, "bad", kExitUsage, ""))["error"]["exitCode"].as<int>(), 2);
  EXPECT_FALSE(YAML::Load(FailureText(Output::kYaml, "bad", kExitUsage, ""))["error"]["grpcCode"]);
  EXPECT_EQ(FailureText(Output::kTable, "bad", kExitFailed, "UNAVAILABLE"), "rocectl: bad\n");
}

// The exit-code table is one for every command, and distinct.
TEST(ExitCodes, AreDistinct) {
  EXPECT_EQ(kExitOk, 0);
  EXPECT_EQ(kExitFindings, 1);
  EXPECT_EQ(kExitUsage, 2);
  EXPECT_EQ(kExitFailed, 3);
}

// apply tells the whole difference: with no step to write, fields the node
// cannot hold, fields no longer managed and a mode change are still a
// difference, printed, and a dry run exits 1 for them ("No changes" only
// when there is none).
TEST(PlanText, NoStepsIsNotNoChangesWhenFieldsCannotBeHeldOrAreDropped) {
  roced::v1::ApplyConfigResponse r;
  EXPECT_FALSE(HasDifference(r));
  EXPECT_THAT(PlanText(r, true), HasSubstr("No changes"));
  EXPECT_EQ(ApplyExitCode(r, true), kExitOk);

  auto* u = r.add_not_held();
  u->set_object("eth0");
  u->set_field("qos.pfc");
  u->set_sync(roced::v1::FIELD_SYNC_UNSUPPORTED);
  u->set_message("eth0 has no control for qos.pfc");
  EXPECT_TRUE(HasDifference(r));
  std::string text = PlanText(r, true);
  EXPECT_THAT(text, Not(HasSubstr("No changes")));
  EXPECT_THAT(text, HasSubstr("! eth0 qos.pfc: unsupported: eth0 has no control for qos.pfc"));
  EXPECT_THAT(text, HasSubstr("cannot converge here: 1 managed field(s) unsupported"));
  EXPECT_EQ(ApplyExitCode(r, true), kExitFindings);

  roced::v1::ApplyConfigResponse dropped;
  auto* d = dropped.add_no_longer_managed();
  d->set_object("eth0");
  d->set_field("qos.ets");
  dropped.set_mode_before(roced::v1::MODE_ENFORCE);
  dropped.set_mode_after(roced::v1::MODE_OBSERVE);
  text = PlanText(dropped, true);
  EXPECT_THAT(text, Not(HasSubstr("No changes")));
  EXPECT_THAT(text, HasSubstr("Mode: enforce -> observe (drift is reported, no longer corrected)"));
  EXPECT_THAT(text, HasSubstr("No longer managed (left as they are, if applied):\n  - eth0 qos.ets\n"));
  EXPECT_EQ(ApplyExitCode(dropped, true), kExitFindings);
  // An apply that was accepted exits 0 whatever it says; one that failed, 3.
  dropped.mutable_result()->set_success(true);
  EXPECT_EQ(ApplyExitCode(dropped, false), kExitOk);
  dropped.mutable_result()->set_success(false);
  EXPECT_EQ(ApplyExitCode(dropped, false), kExitFailed);
}

TEST(StatusTable, FlagsDegradedPcieAndMissingRoceV2Gid) {
  std::string t = StatusTable(SampleState());
  EXPECT_THAT(t, HasSubstr("PCIe link degraded: 8 GT/s x4, card supports 16 GT/s x16"));
  EXPECT_THAT(t, HasSubstr("no RoCE v2 GID"));
  EXPECT_THAT(t, HasSubstr("RoCE v1"));
}

TEST(StatusTable, HealthyDeviceHasNoWarnings) {
  auto s = SampleState();
  s.mutable_devices(0)->mutable_pcie()->set_degraded(false);
  s.mutable_devices(0)->mutable_ports(0)->mutable_gids(0)->set_type(roced::v1::GID_TYPE_ROCE_V2);
  EXPECT_THAT(StatusTable(s), Not(HasSubstr("Warnings")));
}

TEST(StatusTable, ListsEachNetdevsSwitchFromLldp) {
  auto s = SampleState();
  EXPECT_THAT(StatusTable(s), Not(HasSubstr("Switches (LLDP)")));
  *s.mutable_observed_at() = google::protobuf::util::TimeUtil::SecondsToTimestamp(1000);
  auto* n = s.add_lldp_neighbors();
  n->set_netdev("ens2f0");
  n->set_system_name("tor1");
  n->set_port_id("Ethernet12");
  n->set_max_frame_size(9216);
  n->mutable_pfc()->set_enabled(0x18);
  n->mutable_pfc()->set_source(roced::v1::DCB_SOURCE_LLDP_IEEE);
  auto* app = n->add_apps();
  app->set_selector(5);
  app->set_protocol(26);
  app->set_priority(3);
  *n->mutable_last_heard() = google::protobuf::util::TimeUtil::SecondsToTimestamp(988);
  const std::string t = StatusTable(s);
  EXPECT_THAT(t, HasSubstr("Switches (LLDP):"));
  EXPECT_THAT(t, ::testing::ContainsRegex("ens2f0 +tor1 +Ethernet12 +\\[3,4\\] +26->3 +9216 +ieee +12s ago"));
}

TEST(StatusTable, ShowsTheAgentsWarningsAndWhoAppliedTheConfig) {
  auto s = SampleState();
  s.mutable_agent()->add_warnings("gRPC on 127.0.0.1:7471 is plaintext and unauthenticated (--insecure)");
  s.mutable_config()->set_generation(4);
  s.mutable_config()->set_source(roced::v1::CONFIG_SOURCE_GRPC);
  s.mutable_config()->set_applied_by("controller.example");
  const std::string t = StatusTable(s);
  EXPECT_THAT(t, HasSubstr("  ! gRPC on 127.0.0.1:7471 is plaintext and unauthenticated (--insecure)"));
  EXPECT_THAT(t, HasSubstr("Config:  generation 4 from gRPC (controller.example), mode"));
}

// A lossless-prio3 port as mlx5 reports it, of which the config manages
// only the MTU.
roced::v1::InterfaceQos LosslessPort() {
  roced::v1::InterfaceQos q;
  q.set_netdev("ens1f0");
  q.set_rdma_device("mlx5_0");
  q.set_port(1);
  q.add_managed("mtu");
  q.set_mtu(9000);
  q.set_dcbx_host(true);
  q.set_trust(roced::v1::TRUST_DSCP);
  (*q.mutable_dscp()->mutable_dscp_to_priority())[26] = 3;
  (*q.mutable_dscp()->mutable_dscp_to_priority())[48] = 6;
  q.mutable_pfc()->add_priorities(3);
  q.mutable_pfc()->set_capability(8);
  for (uint32_t v : {0, 0, 0, 1, 0, 0, 0, 0}) q.mutable_ets()->add_priority_to_tc(v);
  for (uint32_t v : {50, 50, 0, 0, 0, 0, 0, 0}) q.mutable_ets()->add_tc_bandwidth(v);
  for (uint32_t v : {2, 2, 0, 0, 0, 0, 0, 0}) q.mutable_ets()->add_tsa(v);
  q.set_ets_willing(false);
  for (uint32_t v : {0, 0, 0, 1, 0, 0, 0, 0}) q.mutable_buffers()->add_priority_to_buffer(v);
  for (uint32_t v : {130944, 130944, 0, 0, 0, 0, 0, 0}) q.mutable_buffers()->add_size_bytes(v);
  q.set_buffer_total_bytes(1048576);
  q.set_pfc_prevention_ms(100);
  q.mutable_ecn_np()->add_priorities(3);
  q.mutable_ecn_rp()->add_priorities(3);
  (*q.mutable_dcqcn())["cnp_dscp"] = 48;
  (*q.mutable_dcqcn())["cnp_802p_prio"] = 6;
  (*q.mutable_dcqcn())["rpg_time_reset"] = 300;
  q.set_roce_mode(roced::v1::ROCE_MODE_V2);
  q.set_roce_tos(106);
  return q;
}

// Status shows every RoCE port's QoS as mlnx_qos -i would, one line a
// value, the managed ones starred, the rest observed only.
TEST(StatusTable, ShowsEachPortsQosWithTheManagedFieldsStarred) {
  auto s = SampleState();
  *s.add_interface_qos() = LosslessPort();
  EXPECT_THAT(StatusTable(s),
              HasSubstr("\nQoS as read from the node (* the config manages it; the rest is observed only):\n"
                        "ens1f0 (mlx5_0 port 1)\n"
                        "  * mtu         9000\n"
                        "    dcbx        host\n"
                        "    trust       dscp\n"
                        "    dscp->prio  26->3 48->6\n"
                        "    pfc         3  (delay 0, cap 8)\n"
                        "    ets         prio->tc 0 0 0 1 0 0 0 0; tc0-1 ets 50%, tc2-7 strict\n"
                        "    buffers     prio->buf 0 0 0 1 0 0 0 0; bytes 130944 130944 of 1048576\n"
                        "    pfc storm   100 ms\n"
                        "    ecn         np 3, rp 3\n"
                        "    cnp         dscp 48, prio 6\n"
                        "    dcqcn       1 other parameter (-o yaml lists them)\n"
                        "    roce        v2, tos 106 (dscp 26, ecn 2)\n"));
  // Nothing QoS before the agent's first pass.
  EXPECT_THAT(StatusTable(SampleState()), Not(HasSubstr("QoS as read")));
}

// Each managed config path stars its line and no other: trust with the
// DSCP table it follows, the CNP's parameters apart from the other DCQCN
// ones, every ECN and rdma_cm path.
TEST(StatusTable, QosStarsTheLineOfEachManagedPathOnly) {
  auto s = SampleState();
  roced::v1::InterfaceQos q = LosslessPort();
  q.clear_managed();
  for (const char* m : {"qos.dscp_to_priority", "qos.dcqcn.cnp_dscp", "qos.ecn.rp_priorities", "roce.default_mode"}) {
    q.add_managed(m);
  }
  *s.add_interface_qos() = q;
  const std::string t = StatusTable(s);
  for (const char* starred : {"  * trust ", "  * dscp->prio ", "  * cnp ", "  * ecn ", "  * roce "}) {
    EXPECT_THAT(t, HasSubstr(starred));
  }
  for (const char* plain : {"    mtu ", "    pfc ", "    ets ", "    dcqcn ", "    buffers ", "    dcbx "}) {
    EXPECT_THAT(t, HasSubstr(plain));
  }
  q.clear_managed();
  q.add_managed("qos.dcqcn.rpg_time_reset");
  s.clear_interface_qos();
  *s.add_interface_qos() = q;
  EXPECT_THAT(StatusTable(s), HasSubstr("  * dcqcn "));
  EXPECT_THAT(StatusTable(s), HasSubstr("    cnp "));
}

// A port without DCB says so once; a managed field the node does not
// report keeps its line, starred, "(not read)".
TEST(StatusTable, QosNamesWhatWasNotReadAndKeepsManagedFieldsThatWerent) {
  auto s = SampleState();
  roced::v1::InterfaceQos q;
  q.set_netdev("eth0");
  q.set_rdma_device("rxe0");
  q.set_port(1);
  q.set_mtu(1500);
  q.add_managed("qos.pfc");
  q.add_managed("roce.default_tos");
  q.set_roce_mode(roced::v1::ROCE_MODE_V2);
  q.set_roce_tos(0);
  for (const char* u : {"dcb", "pfc_prevention", "ecn_np", "ecn_rp", "dcqcn"}) q.add_unread(u);
  *s.add_interface_qos() = q;
  EXPECT_THAT(StatusTable(s), HasSubstr("eth0 (rxe0 port 1)\n"
                                        "    mtu         1500\n"
                                        "  * pfc         (not read)\n"
                                        "  * roce        v2, tos 0 (dscp 0, ecn 0)\n"
                                        "    not read    dcb, pfc storm, ecn, dcqcn\n"));
}

// The DSCP table is grouped by priority with ranges (mlx5 fills all 64
// entries under DSCP trust), wrapped within 80 columns; ETS classes alike
// are one range; PFC off says "none"; every line fits 80 columns.
TEST(StatusTable, QosGroupsTheDscpTableByPriorityWithinEightyColumns) {
  auto s = SampleState();
  roced::v1::InterfaceQos q = LosslessPort();
  q.clear_managed();
  auto* dscp = q.mutable_dscp()->mutable_dscp_to_priority();
  for (uint32_t d = 0; d < 64; ++d) (*dscp)[d] = d >> 3;
  (*dscp)[26] = 5;
  q.mutable_pfc()->clear_priorities();
  q.clear_ets();
  for (uint32_t v : {1, 0, 2, 3, 4, 5, 6, 7}) q.mutable_ets()->add_priority_to_tc(v);
  for (int k = 0; k < 8; ++k) q.mutable_ets()->add_tc_bandwidth(0);
  for (int k = 0; k < 8; ++k) q.mutable_ets()->add_tsa(255);
  *s.add_interface_qos() = q;
  const std::string t = StatusTable(s);
  EXPECT_THAT(t, HasSubstr("    dscp->prio  0-7->0 8-15->1 16-23->2 24,25,27-31->3 32-39->4 26,40-47->5\n"
                           "                48-55->6 56-63->7\n"));
  EXPECT_THAT(t, HasSubstr("    pfc         none  (delay 0, cap 8)\n"));
  EXPECT_THAT(t, HasSubstr("    ets         prio->tc 1 0 2 3 4 5 6 7; tc0-7 vendor\n"));
  EXPECT_THAT(t, Not(HasSubstr("\n  * ")));
  const size_t qos = t.find("QoS as read");
  for (absl::string_view line : absl::StrSplit(t.substr(qos, t.find("\nWarnings:") - qos), '\n')) {
    EXPECT_LE(line.size(), 80u) << line;
  }
}

// -o json and -o yaml carry the same data: each port's values, what the
// config manages and what was not read.
TEST(Output, JsonAndYamlCarryEachPortsQos) {
  auto s = SampleState();
  *s.add_interface_qos() = LosslessPort();
  s.mutable_interface_qos(0)->add_unread("ecn_rp");
  YAML::Node y = YAML::Load(ToYaml(s));
  const YAML::Node q = y["interfaceQos"][0];
  EXPECT_EQ(q["netdev"].as<std::string>(), "ens1f0");
  EXPECT_EQ(q["managed"][0].as<std::string>(), "mtu");
  EXPECT_EQ(q["unread"][0].as<std::string>(), "ecn_rp");
  EXPECT_EQ(q["trust"].as<std::string>(), "TRUST_DSCP");
  EXPECT_EQ(q["dscp"]["dscpToPriority"]["26"].as<int>(), 3);
  EXPECT_EQ(q["pfc"]["priorities"][0].as<int>(), 3);
  EXPECT_EQ(q["ets"]["tcBandwidth"][1].as<int>(), 50);
  EXPECT_EQ(q["bufferTotalBytes"].as<int>(), 1048576);
  EXPECT_EQ(q["dcqcn"]["cnp_dscp"].as<std::string>(), "48");
  EXPECT_EQ(q["roceTos"].as<int>(), 106);
  EXPECT_THAT(ToJson(s), HasSubstr("\"interfaceQos\": ["));
}

TEST(Output, JsonIsProto3MappingAndYamlIsTheSameDocument) {
  auto s = SampleState();
  std::string json = ToJson(s);
  EXPECT_THAT(json, HasSubstr("\"pciAddress\": \"0000:af:00.0\""));
  EXPECT_THAT(json, HasSubstr("\"type\": \"GID_TYPE_ROCE_V1\""));
  YAML::Node y = YAML::Load(ToYaml(s));
  EXPECT_EQ(y["devices"][0]["pcie"]["currentWidth"].as<int>(), 4);
  EXPECT_EQ(y["hostname"].as<std::string>(), "node1");
}

TEST(Output, ParseOutputRejectsUnknownFormats) {
  EXPECT_TRUE(ParseOutput("json").ok());
  auto bad = ParseOutput("xml");
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("table, json, yaml"));
}

TEST(EventLine, SaysWhatHappenedForEachKind) {
  roced::v1::StateEvent e;
  e.mutable_at()->set_seconds(1800000000);
  auto* c = e.mutable_config();
  c->set_accepted(true);
  c->set_generation(7);
  c->set_source(roced::v1::CONFIG_SOURCE_GRPC);
  c->set_identity("controller.example");
  EXPECT_EQ(EventLine(e), "2027-01-15T08:00:00Z  config     generation 7 accepted from grpc by controller.example");
  e.mutable_config()->set_accepted(false);
  e.mutable_config()->set_error("line 3: bad");
  EXPECT_EQ(EventLine(e), "2027-01-15T08:00:00Z  config     rejected: line 3: bad");
  auto* d = e.mutable_drift();
  d->mutable_field()->set_object("eth0");
  d->mutable_field()->set_field("qos.pfc");
  d->mutable_field()->set_observed("none");
  d->mutable_field()->set_desired("3");
  d->set_corrected(true);
  EXPECT_EQ(EventLine(e), "2027-01-15T08:00:00Z  drift      eth0 qos.pfc: none (wanted 3), corrected");
  auto* dev = e.mutable_device();
  dev->set_kind(roced::v1::DeviceEvent::KIND_REMOVED);
  dev->set_device("rxe0");
  EXPECT_EQ(EventLine(e), "2027-01-15T08:00:00Z  device     rxe0 removed");
  auto* r = e.mutable_reconcile();
  r->set_generation(7);
  auto* step = r->mutable_result()->add_steps();
  step->mutable_step()->set_object("eth0");
  step->mutable_step()->set_field("mtu");
  step->set_error("EBUSY");
  r->mutable_result()->set_rolled_back(true);
  EXPECT_EQ(EventLine(e), "2027-01-15T08:00:00Z  reconcile  generation 7: 1 step(s) FAILED, rolled back (eth0 mtu: EBUSY)");
  auto* p = e.mutable_pfc_storm();
  p->set_netdev("eth0");
  p->set_priority(3);
  p->set_stormed(true);
  p->set_rx_pause_frames(120000);
  EXPECT_EQ(EventLine(e), "2027-01-15T08:00:00Z  pfc-storm  eth0 priority 3 storming (120000 rx pause frames)");
}

TEST(ToJsonLine, IsOneLine) {
  roced::v1::StateEvent e;
  e.mutable_config()->set_generation(3);
  const std::string line = ToJsonLine(e);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_THAT(line, ::testing::HasSubstr("\"generation\":\"3\""));
}

}  // namespace
}  // namespace roced::ctl

// YAML decoding and validation of NodeConfig: every bad input is rejected
// with an error that names the field path, the bad value and what is
// allowed, and carries the YAML line and column.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "google/protobuf/util/message_differencer.h"
#include "model/config_yaml.h"
#include "model/dcqcn_params.h"
#include "model/match.h"
#include "model/validate.h"
#include "util/fs.h"
#include "util/utf8.h"

namespace roced::model {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kHeader[] = "apiVersion: roced/v1\nkind: NodeConfig\n";

// Decodes + validates; returns all issues.
std::vector<roced::v1::ValidationIssue> Check(const std::string& yaml) {
  std::vector<roced::v1::ValidationIssue> issues;
  auto decoded = DecodeYamlConfig(yaml, &issues);
  if (decoded.ok()) ValidateConfig(decoded->config, &decoded->positions, &issues);
  return issues;
}

std::string Errors(const std::string& yaml) {
  std::vector<roced::v1::ValidationIssue> errors;
  for (auto& i : Check(yaml)) {
    if (i.severity() == roced::v1::SEVERITY_ERROR) errors.push_back(i);
  }
  return FormatIssues("cfg.yaml", errors);
}

std::string Warnings(const std::string& yaml) {
  std::vector<roced::v1::ValidationIssue> w;
  for (auto& i : Check(yaml)) {
    if (i.severity() == roced::v1::SEVERITY_WARNING) w.push_back(i);
  }
  return FormatIssues("cfg.yaml", w);
}

TEST(ConfigDecode, ExampleFilesAreValid) {
  for (const char* name : {"minimal.yaml", "lossless-prio3.yaml", "lossless-prio3-tuned.yaml"}) {
    std::string path = std::string(ROCED_SOURCE_DIR) + "/deploy/examples/" + name;
    std::vector<roced::v1::ValidationIssue> warnings;
    auto config = LoadConfigFile(path, &warnings);
    ASSERT_TRUE(config.ok()) << path << ": " << config.status();
    EXPECT_TRUE(warnings.empty()) << FormatIssues(path, warnings);
  }
}

TEST(ConfigDecode, FullExampleMapsEveryFieldOntoTheProto) {
  auto text = util::ReadFile(std::string(ROCED_SOURCE_DIR) + "/deploy/examples/lossless-prio3.yaml");
  ASSERT_TRUE(text.ok());
  std::vector<roced::v1::ValidationIssue> issues;
  auto d = DecodeYamlConfig(*text, &issues);
  ASSERT_TRUE(d.ok()) << FormatIssues("x", issues);
  const auto& c = d->config;
  EXPECT_EQ(c.api_version(), "roced/v1");
  EXPECT_EQ(c.mode(), roced::v1::MODE_ENFORCE);
  ASSERT_EQ(c.interfaces_size(), 1);
  const auto& i = c.interfaces(0);
  EXPECT_EQ(i.match().netdev(), "eth0");
  EXPECT_FALSE(i.has_mtu());  // absent stays absent: not managed
  EXPECT_EQ(i.qos().trust(), roced::v1::TRUST_DSCP);
  EXPECT_EQ(i.qos().dscp_to_priority().at(26), 3u);
  EXPECT_EQ(i.qos().dscp_to_priority().at(48), 6u);
  ASSERT_EQ(i.qos().pfc().priorities_size(), 1);
  EXPECT_EQ(i.qos().pfc().priorities(0), 3u);
  EXPECT_EQ(i.qos().ets().tsa(0), roced::v1::TSA_ETS);
  EXPECT_EQ(i.qos().ets().tsa(7), roced::v1::TSA_STRICT);
  EXPECT_EQ(i.qos().ets().priority_to_tc(3), 1u);
  EXPECT_EQ(i.roce().default_mode(), roced::v1::ROCE_MODE_V2);
  EXPECT_EQ(i.roce().default_tos(), 106u);
}

TEST(ConfigDecode, DurationsHugepagesAndProbesDecode) {
  std::vector<roced::v1::ValidationIssue> issues;
  auto d = DecodeYamlConfig(std::string(kHeader) +
                                "hugepages:\n  - {size: 1Gi, count: 4, numa_node: 0}\n"
                                "probes:\n  peers: [{name: n2, address: '10.0.0.2:7471'}]\n"
                                "  latency: {interval: 1m30s, iterations: 500}\n",
                            &issues);
  ASSERT_TRUE(d.ok()) << FormatIssues("x", issues);
  EXPECT_EQ(d->config.hugepages(0).count(), 4u);
  EXPECT_TRUE(d->config.hugepages(0).has_numa_node());
  EXPECT_EQ(d->config.probes().latency().interval().seconds(), 90);
  EXPECT_EQ(d->config.probes().peers(0).address(), "10.0.0.2:7471");
}

TEST(ConfigDecode, EncodeThenDecodeGivesTheSameConfig) {
  auto text = util::ReadFile(std::string(ROCED_SOURCE_DIR) + "/deploy/examples/lossless-prio3.yaml");
  ASSERT_TRUE(text.ok());
  std::vector<roced::v1::ValidationIssue> issues;
  auto d1 = DecodeYamlConfig(*text, &issues);
  ASSERT_TRUE(d1.ok());
  ApplyDefaults(&d1->config);
  std::string again = EncodeYamlConfig(d1->config);
  auto d2 = DecodeYamlConfig(again, &issues);
  ASSERT_TRUE(d2.ok()) << again << FormatIssues("x", issues);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(d1->config, d2->config)) << again;
}

TEST(ConfigValidate, PfcPriorityNineIsRejectedNamingFieldAndRange) {
  std::string e = Errors(std::string(kHeader) +
                         "interfaces:\n"
                         "  - match: {netdev: eth0}\n"
                         "    qos:\n"
                         "      pfc: {priorities: [3, 9]}\n");
  EXPECT_THAT(e, AllOf(HasSubstr("cfg.yaml:6:"), HasSubstr("interfaces[0].qos.pfc.priorities[1]"),
                       HasSubstr("9"), HasSubstr("allowed 0-7")));
}

TEST(ConfigValidate, WarnsWhenPfcPriorityHasNoDscpMappedUnderDscpTrust) {
  std::string w = Warnings(std::string(kHeader) +
                           "interfaces:\n"
                           "  - match: {netdev: eth0}\n"
                           "    qos:\n"
                           "      trust: dscp\n"
                           "      dscp_to_priority: {26: 4}\n"
                           "      pfc: {priorities: [3]}\n");
  EXPECT_THAT(w, AllOf(HasSubstr("warning"), HasSubstr("qos.pfc.priorities"),
                       HasSubstr("priority 3")));
}

TEST(ConfigValidate, WarnsWhenLosslessPriorityHasNoEcn) {
  std::string w = Warnings(std::string(kHeader) +
                           "interfaces:\n  - match: {netdev: eth0}\n    qos:\n"
                           "      pfc: {priorities: [3]}\n      ecn: {np_priorities: [], rp_priorities: []}\n");
  EXPECT_THAT(w, HasSubstr("qos.ecn.np_priorities"));
}

TEST(ConfigValidate, WarnsWhenRoceTosDscpIsUnmapped) {
  std::string w = Warnings(std::string(kHeader) +
                           "interfaces:\n  - match: {netdev: eth0}\n    qos:\n"
                           "      trust: dscp\n      dscp_to_priority: {26: 3}\n"
                           "    roce: {default_tos: 184}\n");
  EXPECT_THAT(w, AllOf(HasSubstr("roce.default_tos"), HasSubstr("DSCP 46")));
}

struct BadCase {
  const char* name;
  std::string yaml;          // appended after the header unless `raw`
  std::vector<const char*> expect;  // substrings of the error text
  bool raw = false;
};

// Keeps ctest names readable (gtest would print the struct's bytes).
void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class BadConfig : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadConfig, IsRejectedWithFieldPathAndReason) {
  const BadCase& c = GetParam();
  std::string e = Errors(c.raw ? c.yaml : std::string(kHeader) + c.yaml);
  ASSERT_FALSE(e.empty()) << "accepted: " << c.yaml;
  for (const char* s : c.expect) EXPECT_THAT(e, HasSubstr(s)) << c.yaml;
  // Every error carries a source position.
  EXPECT_THAT(e, ::testing::ContainsRegex("cfg\\.yaml:[0-9]+:[0-9]+: error"));
}

const std::string kIface = "interfaces:\n  - match: {netdev: eth0}\n";

INSTANTIATE_TEST_SUITE_P(
    All, BadConfig,
    ::testing::Values(
        BadCase{"WrongApiVersion", "apiVersion: roced/v2\nkind: NodeConfig\n",
                {"apiVersion", "roced/v2", "must be roced/v1"}, true},
        BadCase{"MissingKind", "apiVersion: roced/v1\nmode: enforce\n", {"kind", "is required"}, true},
        BadCase{"UnknownTopLevelField", "colour: blue\n", {"unknown field 'colour'", "allowed:"}},
        BadCase{"UnknownNestedField", kIface + "    qos: {pfcc: {priorities: [3]}}\n",
                {"interfaces[0].qos.pfcc", "unknown field"}},
        BadCase{"BadMode", "mode: fix\n", {"mode", "'fix' is not one of: enforce, observe"}},
        BadCase{"BadTrust", kIface + "    qos: {trust: vlan}\n", {"qos.trust", "pcp, dscp"}},
        BadCase{"BadDcbxMode", kIface + "    qos: {dcbx_mode: firmware}\n", {"qos.dcbx_mode", "'firmware'", "host"}},
        BadCase{"EcnRequireNotABool", kIface + "    qos: {ecn: {np_priorities: [3], require: maybe}}\n",
                {"qos.ecn.require", "'maybe'"}},
        BadCase{"DscpOutOfRange", kIface + "    qos: {dscp_to_priority: {64: 3}}\n",
                {"dscp_to_priority[64]", "DSCP 64", "allowed 0-63"}},
        BadCase{"DscpPriorityOutOfRange", kIface + "    qos: {dscp_to_priority: {26: 8}}\n",
                {"dscp_to_priority[26]", "priority 8", "allowed 0-7"}},
        BadCase{"PfcPriorityNegative", kIface + "    qos: {pfc: {priorities: [-1]}}\n",
                {"qos.pfc.priorities[0]", "'-1' is not a non-negative integer"}},
        BadCase{"PfcDuplicate", kIface + "    qos: {pfc: {priorities: [3, 3]}}\n",
                {"pfc.priorities[1]", "listed twice"}},
        BadCase{"PfcNotAList", kIface + "    qos: {pfc: {priorities: 3}}\n",
                {"pfc.priorities", "expected a sequence"}},
        BadCase{"EtsSevenEntries",
                kIface + "    qos: {ets: {priority_to_tc: [0,0,0,1,0,0,0], tc_bandwidth: "
                         "[50,50,0,0,0,0,0,0], tsa: [ets,ets,strict,strict,strict,strict,strict,strict]}}\n",
                {"ets.priority_to_tc", "exactly 8 entries", "found 7"}},
        BadCase{"EtsBandwidthSum",
                kIface + "    qos: {ets: {priority_to_tc: [0,0,0,1,0,0,0,0], tc_bandwidth: "
                         "[50,40,0,0,0,0,0,0], tsa: [ets,ets,strict,strict,strict,strict,strict,strict]}}\n",
                {"ets.tc_bandwidth", "sum to 90", "must sum to 100"}},
        BadCase{"EtsBadTsa",
                kIface + "    qos: {ets: {priority_to_tc: [0,0,0,1,0,0,0,0], tc_bandwidth: "
                         "[50,50,0,0,0,0,0,0], tsa: [ets,wrr,strict,strict,strict,strict,strict,strict]}}\n",
                {"ets.tsa[1]", "'wrr' is not one of: strict, ets, vendor"}},
        BadCase{"EtsTcOutOfRange",
                kIface + "    qos: {ets: {priority_to_tc: [0,0,0,8,0,0,0,0], tc_bandwidth: "
                         "[50,50,0,0,0,0,0,0], tsa: [ets,ets,strict,strict,strict,strict,strict,strict]}}\n",
                {"ets.priority_to_tc[3]", "traffic class 8", "allowed 0-7"}},
        BadCase{"EcnPriorityOutOfRange", kIface + "    qos: {ecn: {np_priorities: [12]}}\n",
                {"ecn.np_priorities[0]", "allowed 0-7"}},
        BadCase{"MtuTooLarge", kIface + "    mtu: 65000\n", {"interfaces[0].mtu", "65000", "allowed 576-9978"}},
        BadCase{"MtuNotANumber", kIface + "    mtu: jumbo\n", {"interfaces[0].mtu", "'jumbo' is not"}},
        BadCase{"TosOutOfRange", kIface + "    roce: {default_tos: 300}\n",
                {"roce.default_tos", "ToS 300", "allowed 0-255"}},
        BadCase{"BadRoceMode", kIface + "    roce: {default_mode: v3}\n",
                {"roce.default_mode", "'v3' is not one of: v1, v2"}},
        BadCase{"MatchMissing", "interfaces:\n  - mtu: 9000\n",
                {"interfaces[0].match", "one of netdev, rdma_device or pci"}},
        BadCase{"MatchTwoKeys", "interfaces:\n  - match: {netdev: eth0, pci: '0000:3b:00.0'}\n",
                {"interfaces[0].match.pci", "only one of netdev, rdma_device, pci"}},
        BadCase{"BadPciAddress", "interfaces:\n  - match: {pci: '3b:00.0'}\n",
                {"match.pci", "not a PCI address"}},
        BadCase{"DuplicateInterface", "interfaces:\n  - match: {netdev: eth0}\n  - match: {netdev: eth0}\n",
                {"interfaces[1].match", "configured twice"}},
        BadCase{"HugepageBadSize", "hugepages:\n  - {size: 4Mi, count: 2}\n",
                {"hugepages[0].size", "'4Mi'", "allowed: 2Mi, 1Gi"}},
        BadCase{"HugepageNegativeNuma", "hugepages:\n  - {size: 2Mi, count: 2, numa_node: -3}\n",
                {"hugepages[0].numa_node", "allowed 0-1023"}},
        BadCase{"HugepageDuplicatePool", "hugepages:\n  - {size: 2Mi, count: 2}\n  - {size: 2048kB, count: 4}\n",
                {"hugepages[1]", "configured twice"}},
        BadCase{"ProbePeerBadAddress", "probes:\n  peers: [{name: a, address: 'nohost'}]\n",
                {"probes.peers[0].address", "host:port"}},
        BadCase{"MeshTorWithASpace", "mesh: {tor: 'rack 12'}\n",
                {"mesh.tor", "'rack 12' has byte 0x20 at offset 4", "allowed printable ASCII without spaces"}},
        BadCase{"MeshPodTooLong", "mesh: {pod: '" + std::string(254, 'p') + "'}\n",
                {"mesh.pod", "the name is 254 bytes long; allowed 1-253"}},
        BadCase{"ProbePeerUnbracketedIpv6", "probes:\n  peers: [{name: a, address: 'fd00::2:7471'}]\n",
                {"probes.peers[0].address", "'fd00::2:7471' is not host:port", "IPv6 in brackets"}},
        BadCase{"ProbePeerSignedPort", "probes:\n  peers: [{name: a, address: 'node2:+80'}]\n",
                {"probes.peers[0].address", "port 1-65535"}},
        BadCase{"ProbeIntervalTooShort", "probes:\n  latency: {interval: 100ms}\n",
                {"probes.latency.interval", "allowed 1s to 24h"}},
        BadCase{"BandwidthDurationTooLong", "probes:\n  bandwidth: {duration: 5m}\n",
                {"probes.bandwidth.duration", "allowed 100ms to 30s"}},
        BadCase{"BadDurationSyntax", "reconcile: {interval: soon}\n",
                {"reconcile.interval", "expected a duration"}},
        BadCase{"DuplicateKey", "mode: enforce\nmode: observe\n", {"mode", "given twice"}},
        // Found by tests/fuzz/config_yaml: raw Latin-1 bytes went into a
        // proto3 string, which GetState and accepted.json cannot carry.
        BadCase{"StringNotUtf8", "interfaces:\n  - match: {rdma_device: rxe\xe4\xe4" "0}\n",
                {"interfaces[0].match.rdma_device", "'rxe\\xe4\\xe40' is not valid UTF-8"}},
        BadCase{"NotAMapping", "- a\n- b\n", {"must be a mapping"}, true},
        BadCase{"YamlSyntaxError", "apiVersion: roced/v1\nkind: [NodeConfig\n", {"YAML syntax error"}, true},
        BadCase{"BufferMapSevenEntries", kIface + "    qos: {buffers: {priority_to_buffer: [0,0,0,1,0,0,0]}}\n",
                {"qos.buffers.priority_to_buffer", "exactly 8 entries (one per priority 0-7), found 7"}},
        BadCase{"BufferIndexOutOfRange", kIface + "    qos: {buffers: {priority_to_buffer: [0,0,0,8,0,0,0,0]}}\n",
                {"qos.buffers.priority_to_buffer[3]", "buffer 8 is out of range; allowed 0-7"}},
        BadCase{"BufferNineSizes", kIface + "    qos: {buffers: {size_bytes: [1,1,1,1,1,1,1,1,1]}}\n",
                {"qos.buffers.size_bytes", "exactly 8 entries (one per buffer 0-7), found 9"}},
        BadCase{"BufferSizesBeyondU32",
                kIface + "    qos: {buffers: {size_bytes: [4294967295,4294967295,0,0,0,0,0,0]}}\n",
                {"qos.buffers.size_bytes", "sum to 8589934590 bytes", "allowed at most 4294967295"}},
        BadCase{"BufferEmpty", kIface + "    qos: {buffers: {}}\n",
                {"qos.buffers", "needs priority_to_buffer (8 entries), size_bytes (8 entries) or both"}},
        BadCase{"PfcPreventionTooLarge", kIface + "    qos: {pfc_prevention: {timeout_ms: 65535}}\n",
                {"qos.pfc_prevention.timeout_ms", "timeout 65535 is out of range; allowed 0-65534"}},
        BadCase{"PfcPreventionAutoFalse", kIface + "    qos: {pfc_prevention: {auto: false}}\n",
                {"qos.pfc_prevention.auto", "give timeout_ms"}},
        BadCase{"PfcPreventionEmpty", kIface + "    qos: {pfc_prevention: {}}\n",
                {"qos.pfc_prevention", "needs timeout_ms (0-65534, 0 disables) or auto: true"}},
        BadCase{"PfcPreventionBoth", kIface + "    qos: {pfc_prevention: {timeout_ms: 100, auto: true}}\n",
                {"qos.pfc_prevention", "only one of timeout_ms, auto"}},
        BadCase{"CnpDscpOutOfRange", kIface + "    qos: {dcqcn: {cnp_dscp: 64}}\n",
                {"qos.dcqcn.cnp_dscp", "cnp_dscp 64 is out of range; allowed 0-63"}},
        BadCase{"CnpPriorityOutOfRange", kIface + "    qos: {dcqcn: {cnp_802p_prio: 8}}\n",
                {"qos.dcqcn.cnp_802p_prio", "allowed 0-7"}},
        BadCase{"DcqcnThresholdZero", kIface + "    qos: {dcqcn: {rpg_threshold: 0}}\n",
                {"qos.dcqcn.rpg_threshold", "rpg_threshold 0 is out of range; allowed 1-31"}},
        BadCase{"DcqcnUnknownParameter", kIface + "    qos: {dcqcn: {rpg_speed: 1}}\n",
                {"qos.dcqcn.rpg_speed", "unknown field"}}),
    [](const ::testing::TestParamInfo<BadCase>& tpi) { return std::string(tpi.param.name); });

TEST(ConfigValidate, NewQosKnobsDecodeAndPass) {
  const std::string yaml = std::string(kHeader) + kIface +
                           "    qos:\n      buffers: {priority_to_buffer: [0,0,0,1,0,0,0,0], size_bytes: "
                           "[262144,131072,0,0,0,0,0,0]}\n      pfc_prevention: {auto: true}\n"
                           "      dcqcn: {cnp_dscp: 48, cnp_802p_prio: 6, rpg_ai_rate: 10, "
                           "rate_reduce_monitor_period: 2147483647}\n";
  EXPECT_EQ(Errors(yaml), "");
  EXPECT_EQ(Warnings(yaml), "");
  std::vector<roced::v1::ValidationIssue> issues;
  auto d = DecodeYamlConfig(yaml, &issues);
  ASSERT_TRUE(d.ok());
  const auto& q = d->config.interfaces(0).qos();
  EXPECT_EQ(q.buffers().priority_to_buffer(3), 1u);
  EXPECT_EQ(q.buffers().size_bytes(1), 131072u);
  EXPECT_TRUE(q.pfc_prevention().auto_());
  EXPECT_FALSE(q.dcqcn().has_rpg_hai_rate());  // absent stays absent: not managed
  EXPECT_EQ(q.dcqcn().rpg_ai_rate(), 10u);
}

TEST(ConfigValidate, WarnsAboutATimeoutMlx5RefusesAndAPriorityOnAnEmptyBuffer) {
  EXPECT_THAT(Warnings(std::string(kHeader) + kIface + "    qos: {pfc_prevention: {timeout_ms: 50}}\n"),
              AllOf(HasSubstr("qos.pfc_prevention.timeout_ms"), HasSubstr("mlx5 accepts 80-8000")));
  EXPECT_EQ(Warnings(std::string(kHeader) + kIface + "    qos: {pfc_prevention: {timeout_ms: 0}}\n"), "");
  EXPECT_THAT(Warnings(std::string(kHeader) + kIface +
                       "    qos: {buffers: {priority_to_buffer: [0,0,0,2,0,0,0,0], size_bytes: "
                       "[262144,131072,0,0,0,0,0,0]}}\n"),
              AllOf(HasSubstr("qos.buffers.priority_to_buffer[3]"), HasSubstr("buffer 2, whose size_bytes is 0")));
}

// The parameter table and the DcqcnConfig message name the same parameters:
// one without the other would be unvalidated or unmanaged.
TEST(DcqcnParams, EveryConfigFieldHasATableEntryAndBack) {
  const google::protobuf::Descriptor* d = roced::v1::DcqcnConfig::descriptor();
  ASSERT_EQ(static_cast<size_t>(d->field_count()), kDcqcnParams.size());
  for (const DcqcnParam& p : kDcqcnParams) {
    const google::protobuf::FieldDescriptor* f = d->FindFieldByName(p.name);
    ASSERT_NE(f, nullptr) << p.name;
    EXPECT_EQ(f->type(), google::protobuf::FieldDescriptor::TYPE_UINT32) << p.name;
    EXPECT_TRUE(f->has_presence()) << p.name << " must be optional: presence means managed";
    EXPECT_LE(p.min, p.max) << p.name;
  }
}

TEST(ConfigDecode, Utf8StringsDecode) {
  std::vector<roced::v1::ValidationIssue> issues;
  auto decoded = DecodeYamlConfig(std::string(kHeader) + "probes:\n  peers: [{name: n\u0153ud-\u00e9, address: 'h:1'}]\n",
                                  &issues);
  ASSERT_TRUE(decoded.ok()) << FormatIssues("cfg.yaml", issues);
  EXPECT_EQ(decoded->config.probes().peers(0).name(), "n\u0153ud-\u00e9");
}

TEST(Utf8, WellFormedIsAcceptedAndEveryIllFormedKindRefused) {
  EXPECT_TRUE(util::IsValidUtf8(""));
  EXPECT_TRUE(util::IsValidUtf8("eth0"));
  EXPECT_TRUE(util::IsValidUtf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // é € U+1F600
  EXPECT_TRUE(util::IsValidUtf8("\xf4\x8f\xbf\xbf"));                       // U+10FFFF
  EXPECT_FALSE(util::IsValidUtf8("rxe\xe4"));               // Latin-1 byte, truncated sequence
  EXPECT_FALSE(util::IsValidUtf8("\x80"));                  // stray continuation byte
  EXPECT_FALSE(util::IsValidUtf8("\xc0\xaf"));              // overlong '/'
  EXPECT_FALSE(util::IsValidUtf8("\xe0\x80\xaf"));          // overlong, three bytes
  EXPECT_FALSE(util::IsValidUtf8("\xed\xa0\x80"));          // surrogate U+D800
  EXPECT_FALSE(util::IsValidUtf8("\xf4\x90\x80\x80"));      // above U+10FFFF
  EXPECT_FALSE(util::IsValidUtf8("\xf8\x88\x80\x80\x80"));  // five-byte form
  EXPECT_FALSE(util::IsValidUtf8("\xc3"));                  // cut short
}

TEST(ConfigLoad, MissingFileIsNotFound) {
  auto c = LoadConfigFile("/nonexistent/roced.yaml", nullptr);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
}

TEST(HugepageSize, AcceptsTheTwoX86Sizes) {
  EXPECT_EQ(HugepageSizeKb("2Mi"), 2048u);
  EXPECT_EQ(HugepageSizeKb("1Gi"), 1048576u);
  EXPECT_EQ(HugepageSizeKb("1048576kB"), 1048576u);
  EXPECT_EQ(HugepageSizeKb("3Mi"), 0u);
}

// One matching rule for every user of interfaces[].match; a PCI address
// matches whatever its case, for the probe runtime too.
TEST(MatchesPort, ByNetdevRdmaDeviceOrPciInAnyCase) {
  roced::v1::RdmaDevice dev;
  dev.set_name("mlx5_0");
  dev.set_pci_address("0000:3b:00.0");
  roced::v1::Port port;
  port.set_number(1);
  port.set_netdev("ens1f0");
  roced::v1::InterfaceMatch m;
  m.set_netdev("ens1f0");
  EXPECT_TRUE(MatchesPort(m, dev, port));
  m.set_netdev("ens1f1");
  EXPECT_FALSE(MatchesPort(m, dev, port));
  m.set_rdma_device("mlx5_0");
  EXPECT_TRUE(MatchesPort(m, dev, port));
  m.set_pci("0000:3B:00.0");
  EXPECT_TRUE(MatchesPort(m, dev, port));
  m.set_pci("0000:3b:00.1");
  EXPECT_FALSE(MatchesPort(m, dev, port));
  dev.clear_pci_address();
  m.set_pci("");
  EXPECT_FALSE(MatchesPort(m, dev, port));  // no address is no match
  EXPECT_FALSE(MatchesPort(roced::v1::InterfaceMatch(), dev, port));
}

// Strings with control characters come back as they went out (a plain
// scalar would have its carriage returns and tabs folded by the reader).
// The two inputs the fuzz targets' round-trip check found, and more.
TEST(YamlRoundTrip, StringsWithControlCharactersComeBackTheSame) {
  for (const std::string& name : {std::string("ethapireiV\r0\r"), std::string("\r\r\r\r"), std::string("a\tb"),
                                 std::string("a\nb"), std::string(" lead"), std::string("x\x01y\x7f")}) {
    roced::v1::NodeConfig c;
    c.set_api_version("roced/v1");
    c.set_kind("NodeConfig");
    c.add_interfaces()->mutable_match()->set_netdev(name);
    std::vector<roced::v1::ValidationIssue> issues;
    auto back = DecodeYamlConfig(EncodeYamlConfig(c), &issues);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->config.interfaces(0).match().netdev(), name) << EncodeYamlConfig(c);
  }
}

}  // namespace
}  // namespace roced::model

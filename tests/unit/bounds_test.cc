// The bounds on what a config may hold (model/config_limits.h,
// model/probe_limits.h): every cap is checked before any entry is looked
// at, each error names the field and the allowed range, the number of
// issues is capped, open enums and non-normalized durations are refused,
// the YAML decoder refuses large files, anchors, aliases and node floods;
// util::EscapeForLog; and util::ReadRegularFile (regular files only, the size
// refused before reading).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hal/hugepage_pools.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "model/config_limits.h"
#include "model/config_yaml.h"
#include "model/probe_limits.h"
#include "model/validate.h"
#include "util/escape.h"
#include "util/fs.h"
#include "util/log_limiter.h"

#include "test_util.h"

namespace roced::model {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
namespace cl = config_limits;
namespace pl = probe_limits;

roced::v1::NodeConfig Base() {
  roced::v1::NodeConfig c;
  c.set_api_version("roced/v1");
  c.set_kind("NodeConfig");
  return c;
}

std::vector<roced::v1::ValidationIssue> Validate(const roced::v1::NodeConfig& c) {
  std::vector<roced::v1::ValidationIssue> issues;
  ValidateConfig(c, nullptr, &issues);
  return issues;
}

roced::v1::InterfaceConfig* AddNetdev(roced::v1::NodeConfig* c, const std::string& name) {
  auto* i = c->add_interfaces();
  i->mutable_match()->set_netdev(name);
  return i;
}

TEST(ConfigBounds, AMillionEmptyInterfacesGetOneErrorNamingTheCapAndCostLittle) {
  roced::v1::NodeConfig c = Base();
  for (int i = 0; i < 1000000; ++i) c.add_interfaces();
  auto start = std::chrono::steady_clock::now();
  auto issues = Validate(c);
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].path(), "interfaces");
  EXPECT_EQ(issues[0].message(), "has 1000000 entries; allowed at most 256 (RoCE ports of one node)");
  EXPECT_EQ(issues[0].severity(), roced::v1::SEVERITY_ERROR);
  // Sizes only: well under a millisecond; 1 s leaves room for sanitizers.
  EXPECT_LT(took, std::chrono::seconds(1));
  std::vector<roced::v1::ValidationIssue> bounds;
  EXPECT_FALSE(CheckConfigBounds(c, &bounds));
  EXPECT_EQ(ErrorSummary(bounds), "interfaces: has 1000000 entries; allowed at most 256 (RoCE ports of one node)");
}

TEST(ConfigBounds, EveryInterfaceAtTheCapIsStillValidated) {
  roced::v1::NodeConfig c = Base();
  for (int i = 0; i < cl::kMaxInterfaces; ++i) AddNetdev(&c, "eth" + std::to_string(i));
  std::vector<roced::v1::ValidationIssue> bounds;
  EXPECT_TRUE(CheckConfigBounds(c, &bounds));
  EXPECT_TRUE(bounds.empty());
  EXPECT_FALSE(HasErrors(Validate(c)));
  AddNetdev(&c, "eth999");
  EXPECT_THAT(ErrorSummary(Validate(c)), HasSubstr("interfaces: has 257 entries; allowed at most 256"));
}

TEST(ConfigBounds, NestedAndOtherListsNameTheirFieldAndCap) {
  roced::v1::NodeConfig c = Base();
  auto* qos = AddNetdev(&c, "eth0")->mutable_qos();
  for (uint32_t d = 0; d <= 64; ++d) (*qos->mutable_dscp_to_priority())[d] = 0;
  for (uint32_t p = 0; p < 9; ++p) qos->mutable_pfc()->add_priorities(p % 8);
  for (uint32_t p = 0; p < 9; ++p) qos->mutable_ecn()->add_np_priorities(p % 8);
  for (int p = 0; p < 9; ++p) qos->mutable_ets()->add_tc_bandwidth(0);
  for (int i = 0; i <= cl::kMaxHugepages; ++i) {
    auto* hp = c.add_hugepages();
    hp->set_size("2Mi");
    hp->set_numa_node(i);
  }
  for (int i = 0; i <= pl::kMaxPeers; ++i) c.mutable_probes()->add_peers();
  std::string e = ErrorSummary(Validate(c));
  EXPECT_THAT(e, HasSubstr("interfaces[0].qos.dscp_to_priority: has 65 entries; allowed at most 64"));
  EXPECT_THAT(e, HasSubstr("interfaces[0].qos.pfc.priorities: has 9 entries; allowed at most 8"));
  EXPECT_THAT(e, HasSubstr("interfaces[0].qos.ecn.np_priorities: has 9 entries; allowed at most 8"));
  EXPECT_THAT(e, HasSubstr("interfaces[0].qos.ets.tc_bandwidth: needs exactly 8 entries"));
  EXPECT_THAT(e, HasSubstr("hugepages: has 33 entries; allowed at most 32"));
  EXPECT_THAT(e, HasSubstr("probes.peers: has 1025 entries; allowed at most 1024"));
  // Only the caps: no entry was looked at (the peers have no names).
  EXPECT_THAT(e, Not(HasSubstr("probes.peers[0]")));
}

TEST(ConfigBounds, IssuesStopAtOneHundredWithACountOfTheRest) {
  roced::v1::NodeConfig c = Base();
  for (int i = 0; i < 250; ++i) AddNetdev(&c, "eth" + std::to_string(i))->set_mtu(1);
  auto issues = Validate(c);
  ASSERT_EQ(issues.size(), cl::kMaxIssues + 1);
  EXPECT_EQ(issues.back().message(), "150 more issue(s) not listed (at most 100 are reported)");
  EXPECT_EQ(issues.back().severity(), roced::v1::SEVERITY_ERROR);
  EXPECT_THAT(ErrorSummary(issues), HasSubstr("; 150 more issue(s) not listed"));
}

TEST(ConfigBounds, UnknownEnumNumbersNameTheFieldAndTheAllowedValues) {
  roced::v1::NodeConfig c = Base();
  c.set_mode(static_cast<roced::v1::Mode>(77));
  auto* iface = AddNetdev(&c, "eth0");
  iface->mutable_qos()->set_trust(static_cast<roced::v1::Trust>(9));
  iface->mutable_roce()->set_default_mode(static_cast<roced::v1::RoceMode>(3));
  auto* ets = iface->mutable_qos()->mutable_ets();
  for (int i = 0; i < 8; ++i) {
    ets->add_priority_to_tc(0);
    ets->add_tc_bandwidth(i == 0 ? 100 : 0);
    ets->add_tsa(i == 0 ? roced::v1::TSA_ETS : roced::v1::TSA_STRICT);
  }
  ets->set_tsa(1, static_cast<roced::v1::Tsa>(5));
  std::string e = ErrorSummary(Validate(c));
  EXPECT_THAT(e, HasSubstr("mode: unknown value 77; allowed: enforce, observe (or unset)"));
  EXPECT_THAT(e, HasSubstr("interfaces[0].qos.trust: unknown value 9; allowed: pcp, dscp (or unset)"));
  EXPECT_THAT(e, HasSubstr("interfaces[0].roce.default_mode: unknown value 3; allowed: v1, v2 (or unset)"));
  EXPECT_THAT(e, HasSubstr("interfaces[0].qos.ets.tsa[1]: unknown value 5; allowed: strict, ets, vendor"));
}

TEST(ConfigBounds, NonNormalizedDurationsAreRefused) {
  roced::v1::NodeConfig c = Base();
  c.mutable_reconcile()->mutable_interval()->set_seconds(5);
  c.mutable_reconcile()->mutable_interval()->set_nanos(-1);
  c.mutable_pfc_watchdog()->mutable_poll_interval()->set_nanos(1000000000);
  c.mutable_probes()->mutable_latency()->mutable_interval()->set_seconds(-5);
  c.mutable_probes()->mutable_latency()->mutable_interval()->set_nanos(3);
  std::string e = ErrorSummary(Validate(c));
  EXPECT_THAT(e, HasSubstr("reconcile.interval: seconds 5 and nanos -1 is not a normalized duration; "
                           "allowed: nanos -999999999 to 999999999 with the sign of seconds"));
  EXPECT_THAT(e, HasSubstr("pfc_watchdog.poll_interval: seconds 0 and nanos 1000000000 is not a normalized"));
  EXPECT_THAT(e, HasSubstr("probes.latency.interval: seconds -5 and nanos 3 is not a normalized"));
  // A normalized value is range-checked as before.
  roced::v1::NodeConfig ok = Base();
  ok.mutable_reconcile()->mutable_interval()->set_seconds(1);
  ok.mutable_reconcile()->mutable_interval()->set_nanos(500000000);
  EXPECT_FALSE(HasErrors(Validate(ok)));
}

TEST(ConfigBounds, PeerAndDeviceStringsAreBoundedAndEchoedEscaped) {
  roced::v1::NodeConfig c = Base();
  auto* pr = c.mutable_probes();
  auto* long_name = pr->add_peers();
  long_name->set_name(std::string(254, 'a'));
  long_name->set_address("10.0.0.1:7471");
  auto* ctl = pr->add_peers();
  ctl->set_name("evil\nINFO fake line");
  ctl->set_address(std::string(300, '9'));
  auto* bad_addr = pr->add_peers();
  bad_addr->set_name("b");
  bad_addr->set_address("x\x1b[2J");
  pr->set_device(std::string(64, 'm'));
  std::string e = ErrorSummary(Validate(c));
  EXPECT_THAT(e, HasSubstr("probes.peers[0].name: name is 254 bytes long; allowed 1-253"));
  EXPECT_THAT(e, HasSubstr("probes.peers[1].name: peer 'evil\\nINFO fake line' has a control character"));
  EXPECT_THAT(e, HasSubstr("probes.peers[1].address: address is 300 bytes long; allowed 1-262"));
  EXPECT_THAT(e, HasSubstr("probes.peers[2].address: 'x\\x1b[2J' is not host:port"));
  EXPECT_THAT(e, HasSubstr("probes.device: RDMA device name is 64 bytes long; allowed 1-63"));
  EXPECT_EQ(e.find('\n'), std::string::npos);
  EXPECT_EQ(e.find('\x1b'), std::string::npos);
}

TEST(ConfigBounds, EchoedValuesAreCut) {
  roced::v1::NodeConfig c = Base();
  c.set_kind(std::string(100000, 'k'));
  std::string e = ErrorSummary(Validate(c));
  EXPECT_THAT(e, HasSubstr("...(99936 more bytes)' is not supported; must be NodeConfig"));
  EXPECT_LT(e.size(), 200u);
}

const char kHeader[] = "apiVersion: roced/v1\nkind: NodeConfig\n";

std::string DecodeErrors(const std::string& yaml) {
  std::vector<roced::v1::ValidationIssue> issues;
  auto d = DecodeYamlConfig(yaml, &issues);
  EXPECT_FALSE(d.ok());
  return FormatIssues("cfg.yaml", issues);
}

TEST(YamlBounds, TextOverOneMebibyteIsRefusedNamingSizeAndCap) {
  std::string yaml = std::string(kHeader) + "#" + std::string(cl::kMaxConfigBytes, 'x') + "\n";
  EXPECT_THAT(DecodeErrors(yaml),
              HasSubstr(absl::StrCat("config is ", yaml.size(), " bytes; the limit is 1048576 (1 MiB)")));
}

TEST(YamlBounds, FileOverOneMebibyteIsRefusedBeforeItIsRead) {
  std::string dir = roced::test_util::MakeTempDir("roced-bounds");
  std::string path = dir + "/big.yaml";
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::string filler(2 << 20, '#');
  fputs(filler.c_str(), f);
  fclose(f);
  auto c = LoadConfigFile(path, nullptr);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(),
              HasSubstr(absl::StrCat("config file ", path, " is 2097152 bytes; at most 1048576 are read")));
  std::filesystem::remove_all(dir);
}

// util::ReadFile reads kernel pseudo-files under configurable roots
// (--sysfs-root, --procfs-root): /dev/zero or a FIFO planted under one is
// neither read without end nor waited on.
TEST(PseudoFileBounds, DevZeroIsCutAtOneMebibyteAndAFifoDoesNotBlock) {
  std::string dir = roced::test_util::MakeTempDir("roced-bounds");
  std::filesystem::create_symlink("/dev/zero", dir + "/zero");
  ASSERT_EQ(::mkfifo((dir + "/fifo").c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  auto zero = roced::util::ReadFile(dir + "/zero");
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(zero.status().message(), HasSubstr(dir + "/zero holds more than 1048576 bytes"));
  auto fifo = roced::util::ReadFile(dir + "/fifo");
  EXPECT_TRUE(fifo.ok() && fifo->empty()) << fifo.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  std::filesystem::remove_all(dir);
}

// gRPC logs one "Handshake failed" line per refused TLS connection; roced
// passes its lines through util::LogLimiter: a flood of 200,000 logs one
// line a minute per kind, with the count of the rest, and a flood of new
// kinds is capped.
TEST(LogLimiter, AHandshakeFloodLogsOneLineAMinuteWithTheCountOfTheRest) {
  roced::util::LogLimiter limiter(absl::Seconds(60), 4);
  const absl::Time start = absl::FromUnixSeconds(1764605400);
  size_t logged = 0;
  uint64_t reported = 0;
  for (int i = 0; i < 200000; ++i) {  // 3,000 a second: 67 s
    std::optional<uint64_t> dropped = limiter.Allow("ssl_transport_security.cc:1501", start + absl::Seconds(i) / 3000);
    if (!dropped) continue;
    ++logged;
    reported += *dropped;
  }
  EXPECT_EQ(logged, 2u);  // at 0 s and at 60 s
  EXPECT_EQ(reported, 180000u - 1);  // the first minute's, reported with the second line
  // New kinds past the cap share one: 1,000 kinds log at most 4 + 1 lines.
  roced::util::LogLimiter kinds(absl::Seconds(60), 4);
  size_t kind_lines = 0;
  for (int i = 0; i < 1000; ++i) kind_lines += kinds.Allow(absl::StrCat("file.cc:", i), start).has_value() ? 1 : 0;
  EXPECT_EQ(kind_lines, 5u);
}

TEST(YamlBounds, AnchorsAndAliasesAreRefusedWithTheirPosition) {
  EXPECT_THAT(DecodeErrors(std::string(kHeader) + "mode: &m observe\n"),
              AllOf(HasSubstr("cfg.yaml:3:7: error: YAML anchors (&name) are not supported")));
  EXPECT_THAT(DecodeErrors(std::string(kHeader) +
                           "interfaces:\n  - &i {match: {netdev: eth0}}\n  - *i\n"),
              HasSubstr("cfg.yaml:4:5: error: YAML anchors (&name) are not supported"));
}

TEST(YamlBounds, ABillionLaughsIsRefusedAtOnce) {
  // Each level doubles the last: expanded, 2^30 scalars.
  std::string yaml = std::string(kHeader) + "x0: &a0 [lol, lol]\n";
  for (int i = 1; i < 30; ++i) {
    yaml += absl::StrCat("x", i, ": &a", i, " [*a", i - 1, ", *a", i - 1, "]\n");
  }
  auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(DecodeErrors(yaml), HasSubstr("YAML anchors (&name) are not supported"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(YamlBounds, MoreNodesThanTheBudgetAreRefusedBeforeATreeIsBuilt) {
  std::string yaml = std::string(kHeader) + "interfaces: [";
  for (size_t i = 0; i < cl::kMaxYamlNodes; ++i) yaml += "{},";
  yaml += "{}]\n";
  ASSERT_LT(yaml.size(), cl::kMaxConfigBytes);
  EXPECT_THAT(DecodeErrors(yaml), HasSubstr("the config has more than 100000 YAML nodes; allowed at most 100000"));
}

TEST(YamlBounds, DeepNestingIsASyntaxErrorNotACrash) {
  std::string yaml = std::string(kHeader) + "mode: " + std::string(5000, '[') + std::string(5000, ']') + "\n";
  EXPECT_THAT(DecodeErrors(yaml), HasSubstr("YAML syntax error"));
  std::string maps = std::string(kHeader) + "mode: ";
  for (int i = 0; i < 3000; ++i) maps += "{a: ";
  maps += "b" + std::string(3000, '}') + "\n";
  EXPECT_THAT(DecodeErrors(maps), HasSubstr("YAML syntax error"));
}

TEST(YamlBounds, DecodeErrorsStopAtOneHundredWithACountOfTheRest) {
  std::string yaml = kHeader;
  for (int i = 0; i < 150; ++i) yaml += absl::StrCat("unknown", i, ": 1\n");
  std::vector<roced::v1::ValidationIssue> issues;
  EXPECT_FALSE(DecodeYamlConfig(yaml, &issues).ok());
  ASSERT_EQ(issues.size(), cl::kMaxIssues + 1);
  EXPECT_EQ(issues.back().message(), "50 more error(s) not listed (at most 100 are reported)");
}

TEST(YamlBounds, EchoedScalarsAreEscaped) {
  EXPECT_THAT(DecodeErrors(std::string(kHeader) + "mode: \"fix\\nERROR injected\"\n"),
              HasSubstr("'fix\\nERROR injected' is not one of: enforce, observe"));
}

TEST(EscapeForLog, EscapesControlsBackslashAndNonAsciiAndCuts) {
  EXPECT_EQ(util::EscapeForLog("eth0"), "eth0");
  EXPECT_EQ(util::EscapeForLog("a\nb\rc\td\\e"), "a\\nb\\rc\\td\\\\e");
  EXPECT_EQ(util::EscapeForLog(std::string("\x1b[2J\x7f\xc3\xa9", 7)), "\\x1b[2J\\x7f\\xc3\\xa9");
  EXPECT_EQ(util::EscapeForLog(std::string("\0z", 2)), "\\x00z");
  EXPECT_EQ(util::EscapeForLog("abcdef", 3), "abc...(3 more bytes)");
  EXPECT_EQ(util::Quoted("x\ny"), "'x\\ny'");
}

TEST(HugepageMemory, PoolsCountTheLargerOfNodeWideAndPerNodeSums) {
  roced::v1::NodeConfig c;
  auto add = [&](const std::string& size, uint64_t count, std::optional<int32_t> numa) {
    auto* hp = c.add_hugepages();
    hp->set_size(size);
    hp->set_count(count);
    if (numa) hp->set_numa_node(*numa);
  };
  add("1Gi", 2, 0);
  add("1Gi", 3, 1);    // the NUMA pools sum to 5 GiB
  add("1Gi", 4, {});   // the node-wide pool (their total) asks 4: 5 counts
  add("2Mi", 512, {});  // 1 GiB
  EXPECT_EQ(model::HugepageBytes(c), (5ull << 30) + (1ull << 30));
  EXPECT_TRUE(model::CheckHugepagesFitMemory(c, 7ull << 30).ok());  // 6 GiB <= 6.3 GiB
  absl::Status s = model::CheckHugepagesFitMemory(c, 6ull << 30);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("hugepages: the pools reserve 6442450944 bytes"));
}

TEST(HugepageMemory, MemTotalIsReadFromMeminfo) {
  EXPECT_EQ(hal::ParseMemTotalBytes("MemTotal:       24597112 kB\nMemFree: 1 kB\n"), 24597112ull * 1024);
  EXPECT_EQ(hal::ParseMemTotalBytes("MemFree: 1 kB\n"), std::nullopt);
  EXPECT_EQ(hal::ParseMemTotalBytes("MemTotal: lots\n"), std::nullopt);
  EXPECT_EQ(hal::ParseMemTotalBytes("MemTotal: 99999999999999999999 kB\n"), std::nullopt);
}

// util::ReadRegularFile: what it refuses, and that it refuses before reading.
class ReadRegularFileTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = roced::test_util::MakeTempDir("roced-readreg"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    FILE* f = fopen(path.c_str(), "w");
    EXPECT_NE(f, nullptr);
    fputs(text.c_str(), f);
    fclose(f);
    return path;
  }
  std::string dir_;
};

TEST_F(ReadRegularFileTest, ReadsARegularFileWhole) {
  const std::string path = Write("a.yaml", "hello\n");
  absl::StatusOr<std::string> text = util::ReadRegularFile(path, 6, "config file");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "hello\n");
}

TEST_F(ReadRegularFileTest, ASizeOverTheLimitIsRefusedBeforeReading) {
  // Sparse: 64 MiB + 1 on disk costs nothing, and reading it whole would show
  // in the time and memory this test takes.
  const std::string path = Write("big", "");
  ASSERT_EQ(::truncate(path.c_str(), (64 << 20) + 1), 0);
  absl::StatusOr<std::string> text = util::ReadRegularFile(path, 64 << 20, "state file");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(text.status().message(),
            absl::StrCat("state file ", path, " is 67108865 bytes; at most 67108864 are read"));
  EXPECT_TRUE(util::ReadRegularFile(path, (64 << 20) + 1, "state file").ok());
}

TEST_F(ReadRegularFileTest, DevZeroIsRefusedAsNotARegularFile) {
  absl::StatusOr<std::string> text = util::ReadRegularFile("/dev/zero", 1 << 20, "config file");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(text.status().message(),
            "config file /dev/zero is a character device; a regular file is required");
}

TEST_F(ReadRegularFileTest, AFifoIsRefusedAtOnceWithoutBlocking) {
  // Without O_NONBLOCK the open would wait for a writer: this test would hang.
  const std::string path = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  absl::StatusOr<std::string> text = util::ReadRegularFile(path, 1 << 20, "config file");
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.status().message(), HasSubstr(path + " is a FIFO; a regular file is required"));
}

TEST_F(ReadRegularFileTest, ADirectoryIsRefused) {
  absl::StatusOr<std::string> text = util::ReadRegularFile(dir_, 1 << 20, "config file");
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.status().message(), HasSubstr(dir_ + " is a directory; a regular file is required"));
}

TEST_F(ReadRegularFileTest, SymlinksAreFollowedAndTheTargetChecked) {
  const std::string target = Write("real.yaml", "x: 1\n");
  const std::string good = dir_ + "/good.yaml";
  const std::string bad = dir_ + "/bad.yaml";
  ASSERT_EQ(::symlink(target.c_str(), good.c_str()), 0);
  ASSERT_EQ(::symlink("/dev/zero", bad.c_str()), 0);
  absl::StatusOr<std::string> text = util::ReadRegularFile(good, 1 << 20, "config file");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "x: 1\n");
  text = util::ReadRegularFile(bad, 1 << 20, "config file");
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(text.status().message(), HasSubstr(bad + " is a character device; a regular file is required"));
}

TEST_F(ReadRegularFileTest, AMissingFileIsNotFound) {
  absl::StatusOr<std::string> text = util::ReadRegularFile(dir_ + "/none", 1 << 20, "config file");
  EXPECT_EQ(text.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace roced::model

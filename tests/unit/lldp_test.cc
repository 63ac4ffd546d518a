// The LLDP decoder (against hand-built frames and against tcpdump's own
// decoding of random ones), the AF_PACKET receiver on a real veth in a
// network namespace, the neighbour table, the metric families, and the
// agent's listener end to end in a namespace.
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "agent/core/agent.h"
#include "agent/core/backends.h"
#include "agent/runtimes/lldp_runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hal/lldp.h"
#include "hal/lldp_socket.h"
#include "lldp_frames_for_test.h"
#include "metrics/lldp_collector.h"

#include "test_util.h"
#include "util/clock.h"
#include "util/proto_time.h"
#include "util/utf8.h"

namespace roced {
namespace {

using ::testing::HasSubstr;
using testing::LldpFrameForTest;
namespace v1 = roced::v1;

v1::LldpNeighbor Decode(const LldpFrameForTest& f) {
  auto n = hal::DecodeLldpFrame(f.bytes());
  EXPECT_TRUE(n.ok()) << n.status();
  return n.ok() ? *n : v1::LldpNeighbor();
}

std::vector<uint32_t> List(const google::protobuf::RepeatedField<uint32_t>& r) { return {r.begin(), r.end()}; }

TEST(LldpDecode, MandatoryAndIdentityTlvs) {
  LldpFrameForTest f;
  f.Mandatory("Ethernet12", 120).SystemName("tor1.pod3").PortDescription("to gpu-17 nic0").End();
  v1::LldpNeighbor n = Decode(f);
  EXPECT_EQ(n.chassis_id(), "02:00:00:00:00:aa");
  EXPECT_EQ(n.chassis_id_subtype(), "mac_address");
  EXPECT_EQ(n.port_id(), "Ethernet12");
  EXPECT_EQ(n.port_id_subtype(), "interface_name");
  EXPECT_EQ(n.ttl_seconds(), 120u);
  EXPECT_EQ(n.system_name(), "tor1.pod3");
  EXPECT_EQ(n.port_description(), "to gpu-17 nic0");
  EXPECT_FALSE(n.has_pfc());
  EXPECT_FALSE(n.has_max_frame_size());
  EXPECT_TRUE(n.notes().empty());
}

TEST(LldpDecode, NetworkAddressChassisIsShownAsAnIp) {
  LldpFrameForTest f;
  f.Tlv(1, {5, 1, 10, 0, 0, 7}).PortName("p1").Ttl(30).End();
  EXPECT_EQ(Decode(f).chassis_id(), "10.0.0.7");
  EXPECT_EQ(Decode(f).chassis_id_subtype(), "network_address");
}

TEST(LldpDecode, IeeeDcbTlvsAndMaximumFrameSize) {
  LldpFrameForTest f;
  f.Mandatory()
      .MaxFrameSize(9216)
      .IeeePfc(/*willing=*/false, /*mbc=*/true, 8, 0x18)
      .IeeeEts(true, true, 0, {0, 0, 0, 1, 0, 0, 2, 0}, {40, 50, 10, 0, 0, 0, 0, 0}, {2, 2, 0, 0, 0, 0, 0, 0})
      .IeeeEts(false, false, 0, {0, 0, 0, 3, 0, 0, 0, 0}, {60, 40, 0, 0, 0, 0, 0, 0}, {2, 2, 2, 0, 0, 0, 0, 0})
      .IeeeApps({{3, 5, 26}, {6, 5, 48}, {4, 3, 4791}})
      .End();
  v1::LldpNeighbor n = Decode(f);
  ASSERT_TRUE(n.has_max_frame_size());
  EXPECT_EQ(n.max_frame_size(), 9216u);
  EXPECT_EQ(n.pfc().source(), v1::DCB_SOURCE_LLDP_IEEE);
  EXPECT_FALSE(n.pfc().willing());
  EXPECT_TRUE(n.pfc().mbc());
  EXPECT_EQ(n.pfc().capability(), 8u);
  EXPECT_EQ(n.pfc().enabled(), 0x18u);  // priorities 3 and 4
  EXPECT_TRUE(n.ets().willing());
  EXPECT_EQ(n.ets().max_tcs(), 8u);  // 0 encodes 8
  EXPECT_EQ(List(n.ets().priority_to_tc()), (std::vector<uint32_t>{0, 0, 0, 1, 0, 0, 2, 0}));
  EXPECT_EQ(List(n.ets().tc_bandwidth()), (std::vector<uint32_t>{40, 50, 10, 0, 0, 0, 0, 0}));
  EXPECT_EQ(List(n.ets().tsa()), (std::vector<uint32_t>{2, 2, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(List(n.ets_recommendation().priority_to_tc()), (std::vector<uint32_t>{0, 0, 0, 3, 0, 0, 0, 0}));
  ASSERT_EQ(n.apps_size(), 3);
  EXPECT_EQ(n.apps(0).selector(), 5u);
  EXPECT_EQ(n.apps(0).protocol(), 26u);
  EXPECT_EQ(n.apps(0).priority(), 3u);
  EXPECT_EQ(n.apps(2).selector(), 3u);
  EXPECT_EQ(n.apps(2).protocol(), 4791u);
  EXPECT_EQ(n.apps(2).priority(), 4u);
}

TEST(LldpDecode, CeeIsTranslatedAndMarkedWithItsSource) {
  LldpFrameForTest f;
  f.Mandatory()
      .Cee({LldpFrameForTest::CeeFeature(1, false, {0, 0, 0, 1, 0, 0, 0, 1}),  // control: seq, ack
            LldpFrameForTest::CeeFeature(2, true, {0x00, 0x01, 0x00, 0x00, 50, 50, 0, 0, 0, 0, 0, 0, 8}),
            LldpFrameForTest::CeeFeature(3, true, {0x08, 8}),
            // iSCSI on TCP/UDP port 3260 at priority 4; FCoE EtherType at 3.
            LldpFrameForTest::CeeFeature(4, false, {0x0c, 0xbc, 0x01, 0x1b, 0x21, 0x10, 0x89, 0x06, 0x00, 0x1b, 0x21, 0x08})})
      .End();
  v1::LldpNeighbor n = Decode(f);
  EXPECT_EQ(n.pfc().source(), v1::DCB_SOURCE_LLDP_CEE);
  EXPECT_TRUE(n.pfc().willing());
  EXPECT_EQ(n.pfc().enabled(), 0x08u);
  EXPECT_EQ(n.ets().source(), v1::DCB_SOURCE_LLDP_CEE);
  EXPECT_EQ(List(n.ets().priority_to_tc()), (std::vector<uint32_t>{0, 0, 0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(List(n.ets().tc_bandwidth()), (std::vector<uint32_t>{50, 50, 0, 0, 0, 0, 0, 0}));
  ASSERT_EQ(n.apps_size(), 2);
  EXPECT_EQ(n.apps(0).source(), v1::DCB_SOURCE_LLDP_CEE);
  EXPECT_EQ(n.apps(0).selector(), 4u);  // TCP/UDP port
  EXPECT_EQ(n.apps(0).protocol(), 3260u);
  EXPECT_EQ(n.apps(0).priority(), 4u);
  EXPECT_EQ(n.apps(1).selector(), 1u);  // EtherType
  EXPECT_EQ(n.apps(1).protocol(), 0x8906u);
  EXPECT_EQ(n.apps(1).priority(), 3u);
}

TEST(LldpDecode, IeeeWinsOverCeeAndSaysSo) {
  LldpFrameForTest f;
  f.Mandatory().IeeePfc(false, false, 8, 0x08).Cee({LldpFrameForTest::CeeFeature(3, true, {0x10, 8})}).End();
  v1::LldpNeighbor n = Decode(f);
  EXPECT_EQ(n.pfc().source(), v1::DCB_SOURCE_LLDP_IEEE);
  EXPECT_EQ(n.pfc().enabled(), 0x08u);
  EXPECT_THAT(n.notes(), ::testing::Contains(HasSubstr("CEE PFC also advertised")));
}

TEST(LldpDecode, FramesWithoutTheMandatoryTlvsInOrderAreRefused) {
  LldpFrameForTest no_ttl;
  no_ttl.ChassisMac({1, 2, 3, 4, 5, 6}).PortName("p").End();
  EXPECT_THAT(std::string(hal::DecodeLldpFrame(no_ttl.bytes()).status().message()), HasSubstr("TLV 3 must be the TTL"));
  LldpFrameForTest swapped;
  swapped.PortName("p").ChassisMac({1, 2, 3, 4, 5, 6}).Ttl(5).End();
  EXPECT_THAT(std::string(hal::DecodeLldpFrame(swapped.bytes()).status().message()),
              HasSubstr("TLV 1 must be the chassis ID"));
}

TEST(LldpDecode, LengthsPastTheBufferAndOtherEtherTypesAreRefused) {
  LldpFrameForTest f;
  f.Mandatory().SystemName("tor1").End();
  std::vector<uint8_t> cut(f.bytes().begin(), f.bytes().end() - 4);  // into the system name
  auto s = hal::DecodeLldpFrame(cut).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("TLV type 5 says 4 bytes, 2 are left"));
  std::vector<uint8_t> ipv4 = f.bytes();
  ipv4[12] = 0x08, ipv4[13] = 0x00;
  EXPECT_THAT(std::string(hal::DecodeLldpFrame(ipv4).status().message()), HasSubstr("EtherType 0x0800 is not LLDP"));
  EXPECT_FALSE(hal::DecodeLldpFrame(std::vector<uint8_t>(5, 0)).ok());
}

TEST(LldpDecode, OneVlanTagIsSkipped) {
  LldpFrameForTest f;
  f.Mandatory().SystemName("tor1").End();
  std::vector<uint8_t> tagged = f.bytes();
  const std::vector<uint8_t> tag = {0x81, 0x00, 0x60, 0x0a};
  tagged.insert(tagged.begin() + 12, tag.begin(), tag.end());
  EXPECT_EQ(Decode(f).system_name(), "tor1");
  auto n = hal::DecodeLldpFrame(tagged);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->system_name(), "tor1");
}

TEST(LldpDecode, MalformedOptionalTlvIsSkippedWithANote) {
  LldpFrameForTest f;
  f.Mandatory().Org(0x0080c2, 11, {0x08}).SystemName("tor1").End();  // PFC one byte short
  v1::LldpNeighbor n = Decode(f);
  EXPECT_FALSE(n.has_pfc());
  EXPECT_EQ(n.system_name(), "tor1");
  EXPECT_THAT(n.notes(), ::testing::Contains(HasSubstr("0080c2/11 of 1 bytes is malformed")));
}

TEST(LldpDecode, AppTableAndTextsAreBounded) {
  std::vector<std::tuple<uint8_t, uint8_t, uint16_t>> apps;
  for (uint16_t d = 0; d < 64; ++d) apps.emplace_back(3, 5, d);
  LldpFrameForTest f;
  f.Mandatory().IeeeApps(apps).IeeeApps({{1, 5, 1}, {1, 5, 2}, {1, 5, 3}}).SystemName("sw\x01\xff\n").End();
  v1::LldpNeighbor n = Decode(f);
  EXPECT_EQ(static_cast<size_t>(n.apps_size()), hal::kMaxLldpApps);
  EXPECT_THAT(n.notes(), ::testing::Contains(HasSubstr("3 application-table entries past the first 64 dropped")));
  EXPECT_EQ(n.system_name(), "sw\\x01\\xff\\n");
  EXPECT_TRUE(util::IsValidUtf8(n.system_name()));
  LldpFrameForTest utf8;
  utf8.Mandatory().SystemName("交换机-1").End();
  EXPECT_EQ(Decode(utf8).system_name(), "交换机-1");
}

// ------------------------------------------------------------ tcpdump

std::string RunTcpdump(const std::vector<uint8_t>& frame) {
  // One file per process: ctest runs the tests of this binary in parallel.
  const std::string path = ::testing::TempDir() + "/lldp-" + std::to_string(getpid()) + ".pcap";
  std::ofstream out(path, std::ios::binary);
  auto u32 = [&](uint32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };
  auto u16 = [&](uint16_t v) { out.write(reinterpret_cast<const char*>(&v), 2); };
  u32(0xa1b2c3d4), u16(2), u16(4), u32(0), u32(0), u32(65535), u32(1);  // pcap header, Ethernet
  u32(0), u32(0), u32(frame.size()), u32(frame.size());
  out.write(reinterpret_cast<const char*>(frame.data()), static_cast<std::streamsize>(frame.size()));
  out.close();
  std::string text;
  FILE* p = popen(("tcpdump -nvv -r " + path + " 2>/dev/null").c_str(), "r");
  char buf[512];
  while (fgets(buf, sizeof(buf), p) != nullptr) text += buf;
  pclose(p);
  std::remove(path.c_str());
  return text;
}

// The numbers after "Value :" / "Value    :" on the line after `heading`.
std::vector<uint32_t> TcpdumpRow(const std::string& text, const std::string& heading) {
  std::vector<uint32_t> row;
  const size_t at = text.find(heading);
  if (at == std::string::npos) return row;
  const size_t value = text.find("Value", at);
  const size_t colon = text.find(':', value);
  std::istringstream line(text.substr(colon + 1, text.find('\n', colon) - colon - 1));
  for (uint32_t v; line >> v;) row.push_back(v);
  return row;
}

uint32_t TcpdumpField(const std::string& text, const std::string& pattern) {
  std::smatch m;
  return std::regex_search(text, m, std::regex(pattern)) ? static_cast<uint32_t>(std::stoul(m[1])) : 9999;
}

TEST(LldpDecode, AgreesWithTcpdumpOnRandomFrames) {
  if (system("command -v tcpdump >/dev/null") != 0) GTEST_SKIP() << "tcpdump is not installed (.ci/run installs it)";
  std::mt19937 rng(20261201);
  auto byte = [&](int max) { return static_cast<uint8_t>(std::uniform_int_distribution<int>(0, max)(rng)); };
  for (int round = 0; round < 25; ++round) {
    std::vector<uint8_t> prio_tc, bw, tsa;
    for (int i = 0; i < 8; ++i) prio_tc.push_back(byte(7)), bw.push_back(byte(100)), tsa.push_back(byte(2));
    std::vector<std::tuple<uint8_t, uint8_t, uint16_t>> apps;
    for (int i = byte(5); i >= 0; --i) apps.emplace_back(byte(7), 1 + byte(4), static_cast<uint16_t>(byte(255) << 8 | byte(255)));
    LldpFrameForTest f;
    f.Mandatory("Ethernet" + std::to_string(round), static_cast<uint16_t>(1 + byte(254)))
        .SystemName("tor" + std::to_string(byte(99)))
        .MaxFrameSize(static_cast<uint16_t>(1500 + byte(255) * 30))
        .IeeePfc(byte(1), byte(1), byte(8), byte(255))
        .IeeeEts(true, byte(1), byte(7), prio_tc, bw, tsa)
        .IeeeApps(apps)
        .End();
    const v1::LldpNeighbor n = Decode(f);
    const std::string t = RunTcpdump(f.bytes());
    SCOPED_TRACE(t);
    ASSERT_THAT(t, HasSubstr("LLDP"));
    EXPECT_THAT(t, HasSubstr("Subtype MAC address (4): " + n.chassis_id()));
    EXPECT_THAT(t, HasSubstr("Subtype Interface Name (5): " + n.port_id()));
    EXPECT_EQ(TcpdumpField(t, "TTL (\\d+)s"), n.ttl_seconds());
    EXPECT_THAT(t, HasSubstr("System Name TLV (5), length " + std::to_string(n.system_name().size()) + ": " + n.system_name()));
    EXPECT_EQ(TcpdumpField(t, "MTU size (\\d+)"), n.max_frame_size());
    EXPECT_EQ(TcpdumpField(t, "Willing: (\\d), MBC"), n.pfc().willing() ? 1u : 0u);
    EXPECT_EQ(TcpdumpField(t, "MBC: (\\d)"), n.pfc().mbc() ? 1u : 0u);
    EXPECT_EQ(TcpdumpField(t, "PFC cap:(\\d+)"), n.pfc().capability());
    std::vector<uint32_t> pfc_bits;
    for (int p = 0; p < 8; ++p) pfc_bits.push_back((n.pfc().enabled() >> p) & 1);
    EXPECT_EQ(TcpdumpRow(t, "PFC Enable"), pfc_bits);
    EXPECT_EQ(TcpdumpField(t, "Willing:(\\d), CBS"), n.ets().willing() ? 1u : 0u);
    EXPECT_EQ(TcpdumpField(t, "Max TCs:(\\d)") % 8, n.ets().max_tcs() % 8);  // tcpdump shows 0 for 8
    EXPECT_EQ(TcpdumpRow(t, "Priority Assignment Table"), List(n.ets().priority_to_tc()));
    EXPECT_EQ(TcpdumpRow(t, "TC Bandwidth Table"), List(n.ets().tc_bandwidth()));
    EXPECT_EQ(TcpdumpRow(t, "TSA Assignment Table"), List(n.ets().tsa()));
    std::vector<std::string> ours, theirs;
    for (const auto& a : n.apps()) {
      ours.push_back(absl::StrCat("Priority: ", a.priority(), ", RES: 0, Sel: ", a.selector(), ", Protocol ID: ", a.protocol()));
    }
    std::regex app_line("Priority: \\d, RES: \\d, Sel: \\d, Protocol ID: \\d+");
    for (auto it = std::sregex_iterator(t.begin(), t.end(), app_line); it != std::sregex_iterator(); ++it) {
      theirs.push_back(it->str());
    }
    EXPECT_EQ(ours, theirs);
  }
}

// All captures of `pattern`'s first group, as numbers (base 0: 0x.. too).
std::vector<uint32_t> TcpdumpAll(const std::string& text, const std::string& pattern) {
  std::vector<uint32_t> out;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    out.push_back(static_cast<uint32_t>(std::stoul((*it)[1], nullptr, 0)));
  }
  return out;
}

TEST(LldpDecode, AgreesWithTcpdumpOnRandomCeeFrames) {
  if (system("command -v tcpdump >/dev/null") != 0) GTEST_SKIP() << "tcpdump is not installed (.ci/run installs it)";
  std::mt19937 rng(7);
  auto byte = [&](int max) { return static_cast<uint8_t>(std::uniform_int_distribution<int>(0, max)(rng)); };
  for (int round = 0; round < 25; ++round) {
    std::vector<uint8_t> pg = {0, 0, 0, 0};
    for (auto& b : pg) b = static_cast<uint8_t>(byte(7) << 4 | byte(7));
    std::vector<uint8_t> pg_body = pg;
    for (int i = 0; i < 8; ++i) pg_body.push_back(byte(100));
    pg_body.push_back(8);
    // One EtherType or TCP/UDP-port entry with one priority.
    const uint8_t sel = byte(1);
    const uint8_t prio = byte(7);
    const std::vector<uint8_t> app = {byte(255), byte(255), sel, 0x1b, 0x21, static_cast<uint8_t>(1u << prio)};
    const bool willing = byte(1);
    LldpFrameForTest f;
    f.Mandatory()
        .Cee({LldpFrameForTest::CeeFeature(1, false, {0, 0, 0, 1, 0, 0, 0, 0}),
              LldpFrameForTest::CeeFeature(2, willing, pg_body), LldpFrameForTest::CeeFeature(3, willing, {byte(255), 8}),
              LldpFrameForTest::CeeFeature(4, willing, app)})
        .End();
    const v1::LldpNeighbor n = Decode(f);
    const std::string t = RunTcpdump(f.bytes());
    SCOPED_TRACE(t);
    ASSERT_THAT(t, HasSubstr("DCB Capability Exchange Protocol Rev 1.01"));
    EXPECT_EQ(TcpdumpAll(t, "PgId_\\d: (\\d+)"), List(n.ets().priority_to_tc()));
    EXPECT_EQ(TcpdumpAll(t, "Pg percentage\\[\\d\\]: (\\d+)"), List(n.ets().tc_bandwidth()));
    EXPECT_EQ(TcpdumpAll(t, "NumTCsSupported: (\\d+)"), std::vector<uint32_t>{n.ets().max_tcs()});
    EXPECT_EQ(TcpdumpAll(t, "PFC Config \\((0x[0-9a-fA-F]+)\\)"), std::vector<uint32_t>{n.pfc().enabled()});
    EXPECT_EQ(TcpdumpAll(t, "NumTCPFCSupported: (\\d+)"), std::vector<uint32_t>{n.pfc().capability()});
    // Willing bit of the PG, PFC and APP features.
    EXPECT_EQ(TcpdumpAll(t, "Willing bit: (\\d)"), (std::vector<uint32_t>{willing, willing, willing}));
    EXPECT_EQ(n.pfc().willing(), willing);
    ASSERT_EQ(n.apps_size(), 1);
    EXPECT_EQ(TcpdumpAll(t, "Application Protocol ID: (0x[0-9a-fA-F]+)"), std::vector<uint32_t>{n.apps(0).protocol()});
    // Not the selector: tcpdump reads it from the top 2 bits of the byte
    // after the protocol, drivers (ice: |upper OUI(6)|selector(2)|) and this
    // decoder from the low 2.
    EXPECT_EQ(TcpdumpAll(t, "User Priority Map: (0x[0-9a-fA-F]+)"), std::vector<uint32_t>{1u << n.apps(0).priority()});
  }
}

// ------------------------------------------------------------ socket

// A veth pair in a network namespace of the test's own: "ens1f0" (one of
// the fixture tree's RoCE netdevs) and its peer "sw0", where the test
// plays the switch.
class LldpNetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (unshare(CLONE_NEWNET) != 0) {
      GTEST_SKIP() << "cannot create a network namespace (needs root / CAP_SYS_ADMIN): " << strerror(errno);
    }
    ASSERT_EQ(system("ip link add ens1f0 type veth peer name sw0 && ip link set ens1f0 up && ip link set sw0 up"), 0);
  }

  // Sends `frame` out of sw0, as the switch would.
  static void Send(const std::vector<uint8_t>& frame) {
    const int fd = socket(AF_PACKET, SOCK_RAW, 0);
    ASSERT_GE(fd, 0) << strerror(errno);
    sockaddr_ll to{};
    to.sll_family = AF_PACKET;
    to.sll_ifindex = static_cast<int>(if_nametoindex("sw0"));
    to.sll_halen = 6;
    ASSERT_EQ(sendto(fd, frame.data(), frame.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof(to)),
              static_cast<ssize_t>(frame.size()))
        << strerror(errno);
    close(fd);
  }
};

TEST_F(LldpNetnsTest, SocketReceivesTheSwitchsFramesAndNothingElse) {
  auto socket = hal::LldpSocket::Open("ens1f0");
  ASSERT_TRUE(socket.ok()) << socket.status();
  LldpFrameForTest f;
  f.Mandatory().SystemName("tor1").End();
  std::vector<uint8_t> ipv4 = f.bytes();
  ipv4[12] = 0x08, ipv4[13] = 0x00;
  Send(ipv4);
  Send(f.bytes());
  std::vector<size_t> ready = hal::WaitForLldp({socket->get()}, -1, absl::Seconds(5));
  ASSERT_EQ(ready, std::vector<size_t>{0});
  auto frame = (*socket)->Read();
  ASSERT_TRUE(frame.ok()) << frame.status();
  ASSERT_TRUE(frame->has_value());
  EXPECT_EQ(**frame, f.bytes());  // the LLDP frame, not the IPv4 one
  auto none = (*socket)->Read();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST_F(LldpNetnsTest, OpeningAMissingNetdevIsNotFound) {
  auto socket = hal::LldpSocket::Open("nosuch0");
  EXPECT_EQ(socket.status().code(), absl::StatusCode::kNotFound);
}

// ------------------------------------------------------------ table

v1::LldpNeighbor Neighbor(const std::string& port, uint32_t ttl) {
  v1::LldpNeighbor n;
  n.set_chassis_id("02:00:00:00:00:aa");
  n.set_port_id(port);
  n.set_ttl_seconds(ttl);
  return n;
}

TEST(LldpTable, NeighboursExpireAfterTheirTtlAndShutdownRemovesThem) {
  agent::LldpTable table;
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_TRUE(table.Heard("eth0", Neighbor("p1", 10), t0));
  EXPECT_FALSE(table.Heard("eth0", Neighbor("p1", 10), t0 + absl::Seconds(5)));
  EXPECT_TRUE(table.Heard("eth1", Neighbor("p2", 30), t0));
  EXPECT_EQ(table.NextExpiry(), t0 + absl::Seconds(15));
  auto now = table.Current(t0 + absl::Seconds(14));
  ASSERT_EQ(now.size(), 2u);
  EXPECT_EQ(now[0].netdev(), "eth0");
  EXPECT_EQ(now[0].frames(), 2u);
  EXPECT_EQ(util::FromProto(now[0].expires_at()), t0 + absl::Seconds(15));
  now = table.Current(t0 + absl::Seconds(15));
  ASSERT_EQ(now.size(), 1u);
  EXPECT_EQ(now[0].netdev(), "eth1");
  table.Heard("eth1", Neighbor("p2", 0), t0 + absl::Seconds(16));  // shutdown LLDPDU
  EXPECT_TRUE(table.Current(t0 + absl::Seconds(16)).empty());
}

TEST(LldpTable, KeepsAtMostFourNeighboursPerNetdevAndOnlyListedNetdevs) {
  agent::LldpTable table;
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  for (int i = 0; i < 6; ++i) table.Heard("eth0", Neighbor("p" + std::to_string(i), 100), t0 + absl::Seconds(i));
  table.Heard("eth1", Neighbor("q", 100), t0);
  auto now = table.Current(t0 + absl::Seconds(10));
  std::vector<std::string> ports;
  for (const auto& n : now) ports.push_back(n.netdev() + "/" + n.port_id());
  EXPECT_EQ(ports, (std::vector<std::string>{"eth0/p2", "eth0/p3", "eth0/p4", "eth0/p5", "eth1/q"}));
  table.Retain({"eth1"});
  ASSERT_EQ(table.Current(t0 + absl::Seconds(10)).size(), 1u);
}

// ------------------------------------------------------------ metrics

TEST(LldpCollector, FamiliesNameTheSwitchAndItsPfcAndAppTable) {
  LldpFrameForTest f;
  f.Mandatory().SystemName("tor1").MaxFrameSize(9216).IeeePfc(false, false, 8, 0x10).IeeeApps({{4, 5, 26}, {3, 5, 26}}).End();
  v1::LldpNeighbor n = Decode(f);
  n.set_netdev("eth0");
  *n.mutable_last_heard() = util::ToProto(absl::FromUnixSeconds(1700000000));
  auto families = metrics::LldpCollector::Families({n});
  std::map<std::string, const prometheus::MetricFamily*> by_name;
  for (const auto& fam : families) by_name[fam.name] = &fam;
  ASSERT_TRUE(by_name.count("roced_lldp_neighbor_info"));
  const auto& info = by_name["roced_lldp_neighbor_info"]->metric.at(0);
  EXPECT_EQ(info.label.at(3).name, "system_name");
  EXPECT_EQ(info.label.at(3).value, "tor1");
  const auto& pfc = by_name.at("roced_switch_pfc_enabled")->metric;
  ASSERT_EQ(pfc.size(), 8u);
  EXPECT_EQ(pfc[4].label.at(1).value, "4");
  EXPECT_EQ(pfc[4].gauge.value, 1);
  EXPECT_EQ(pfc[3].gauge.value, 0);
  // One series per (selector, protocol): the first entry's priority.
  const auto& app = by_name.at("roced_switch_app_priority")->metric;
  ASSERT_EQ(app.size(), 1u);
  EXPECT_EQ(app[0].label.at(1).value, "dscp");
  EXPECT_EQ(app[0].label.at(2).value, "26");
  EXPECT_EQ(app[0].gauge.value, 4);
  EXPECT_EQ(by_name.at("roced_switch_max_frame_size_bytes")->metric.at(0).gauge.value, 9216);
  EXPECT_EQ(by_name.at("roced_lldp_neighbor_last_heard_timestamp_seconds")->metric.at(0).gauge.value, 1700000000);
  EXPECT_TRUE(metrics::LldpCollector::Families({}).empty());
}

// ------------------------------------------------------------ driver peer

hal::DcbReading PeerReading(uint8_t pfc_en, std::vector<hal::DcbApp> apps) {
  hal::DcbReading r;
  hal::DcbPfc pfc;
  pfc.pfc_en = pfc_en;
  pfc.pfc_cap = 8;
  r.peer_pfc = pfc;
  r.peer_apps = std::move(apps);
  return r;
}

TEST(DriverPeerView, MarksEveryValueAsTheDriversAndFillsOnlyWhatLldpLacks) {
  EXPECT_FALSE(agent::DriverPeerView("eth0", hal::DcbReading()).has_value());
  auto view = agent::DriverPeerView("eth0", PeerReading(0x10, {{5, 4, 26}}));
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->netdev(), "eth0");
  EXPECT_EQ(view->chassis_id_subtype(), "driver");
  EXPECT_EQ(view->pfc().source(), v1::DCB_SOURCE_DCB_PEER);
  EXPECT_EQ(view->pfc().enabled(), 0x10u);
  ASSERT_EQ(view->apps_size(), 1);
  EXPECT_EQ(view->apps(0).source(), v1::DCB_SOURCE_DCB_PEER);
  EXPECT_EQ(view->apps(0).priority(), 4u);
  // LLDP heard PFC but no app table: the driver's table fills in, its PFC
  // does not replace LLDP's.
  LldpFrameForTest f;
  f.Mandatory().IeeePfc(false, false, 8, 0x08).End();
  v1::LldpNeighbor heard = Decode(f);
  agent::MergeDriverPeer(*view, &heard);
  EXPECT_EQ(heard.pfc().source(), v1::DCB_SOURCE_LLDP_IEEE);
  EXPECT_EQ(heard.pfc().enabled(), 0x08u);
  ASSERT_EQ(heard.apps_size(), 1);
  EXPECT_EQ(heard.apps(0).source(), v1::DCB_SOURCE_DCB_PEER);
}

// ------------------------------------------------------------ runtime

TEST_F(LldpNetnsTest, TheAgentHearsTheSwitchAndForgetsItAfterItsTtl) {
  hal::Paths paths;
  paths.sysfs = std::string(ROCED_FIXTURES) + "/sysfs";
  agent::NodeBackends backends(paths, /*use_verbs=*/false);
  agent::AgentOptions opts;
  opts.paths = paths;
  opts.use_netlink = false;
  opts.backends = backends.agent();
  agent::Agent agent(opts);
  agent.Start();
  // No driver on this machine fills DCB peer attributes: a stand-in reader
  // reports them for ens1f1 (absent here, so it never hears LLDP).
  agent::LldpRuntimeOptions options;
  options.dcb_read = [](const std::string& netdev) -> absl::StatusOr<hal::DcbReading> {
    if (netdev == "ens1f1") return PeerReading(0x08, {});
    return absl::UnimplementedError("no DCB");
  };
  util::SimulatedClock clock(absl::Now());  // the TTLs' clock; frames arrive in real time
  options.clock = &clock;
  agent::LldpRuntime lldp(&agent, options);
  lldp.Start();
  // The fixture's other RoCE netdevs do not exist in this namespace: the
  // component says so, naming them.
  auto health = [&] {
    const v1::NodeState state = agent.State();
    for (const auto& c : state.agent().components()) {
      if (c.name() == "lldp") return c;
    }
    return v1::ComponentHealth();
  };
  ASSERT_TRUE(test_util::WaitFor([&] { return health().name() == "lldp"; }, absl::Seconds(5)));
  EXPECT_FALSE(health().healthy());
  EXPECT_THAT(health().message(), HasSubstr("eth0: no netdev eth0"));
  EXPECT_THAT(health().message(), ::testing::Not(HasSubstr("ens1f0")));

  LldpFrameForTest f;
  f.Mandatory("Ethernet7", 2).SystemName("tor9").IeeePfc(false, false, 8, 0x08).End();
  Send(f.bytes());
  ASSERT_TRUE(test_util::WaitFor([&] { return lldp.Neighbors().size() == 2; }, absl::Seconds(5)));
  const v1::LldpNeighbor n = lldp.Neighbors().at(0);
  EXPECT_EQ(lldp.Neighbors().at(1).netdev(), "ens1f1");
  EXPECT_EQ(lldp.Neighbors().at(1).pfc().source(), v1::DCB_SOURCE_DCB_PEER);
  EXPECT_EQ(n.netdev(), "ens1f0");
  EXPECT_EQ(n.system_name(), "tor9");
  EXPECT_EQ(n.port_id(), "Ethernet7");
  EXPECT_EQ(n.pfc().enabled(), 0x08u);
  // Nothing more is sent: there until its 2 s TTL runs out, then gone.
  clock.Advance(absl::Milliseconds(1900));
  EXPECT_EQ(lldp.Neighbors().size(), 2u) << "expired before its TTL";
  clock.Advance(absl::Milliseconds(100));
  ASSERT_EQ(lldp.Neighbors().size(), 1u) << "still there past its TTL";
  EXPECT_EQ(lldp.Neighbors().at(0).netdev(), "ens1f1");
  lldp.Stop();
  agent.Stop();
}

}  // namespace
}  // namespace roced

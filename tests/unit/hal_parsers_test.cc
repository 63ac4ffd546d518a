// The parsers of lib/hal over the bytes the kernel hands back (netlink
// replies and notifications, ethtool string sets, sysfs names and values):
// what they read from well-formed input, and that malformed input is
// refused instead of read past. The malformed cases are inputs
// tests/fuzz/netlink found; they are kept in tests/fuzz/corpus/netlink.
#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hal/dcb_fixture_files.h"
#include "hal/dcb_netlink.h"
#include "hal/ethtool_stats.h"
#include "hal/hugepage_pools.h"
#include "hal/link_monitor.h"
#include "hal/sysfs_discovery.h"
#include "test_util.h"

namespace roced::hal {
namespace {

using ::testing::ElementsAre;

// Netlink messages laid out by hand, as the kernel writes them.
class NetlinkBytes {
 public:
  // Starts a message; Attr() appends to it, End() fixes its length.
  NetlinkBytes& Msg(uint16_t type, uint32_t seq) {
    start_ = bytes_.size();
    nlmsghdr h{};
    h.nlmsg_type = type;
    h.nlmsg_seq = seq;
    Append(&h, sizeof(h));
    return *this;
  }
  NetlinkBytes& Dcb(uint8_t cmd) {
    dcbmsg d{};
    d.cmd = cmd;
    return Append(&d, sizeof(d));
  }
  NetlinkBytes& Attr(uint16_t type, const void* data, size_t size) {
    nlattr a{};
    a.nla_len = static_cast<uint16_t>(sizeof(a) + size);
    a.nla_type = type;
    Append(&a, sizeof(a));
    Append(data, size);
    bytes_.resize((bytes_.size() + 3) & ~size_t{3});
    return *this;
  }
  NetlinkBytes& Append(const void* data, size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    bytes_.insert(bytes_.end(), p, p + size);
    return *this;
  }
  // Sets the message's length to what was appended (or `len`).
  NetlinkBytes& End(size_t len = 0) {
    const uint32_t n = static_cast<uint32_t>(len != 0 ? len : bytes_.size() - start_);
    std::memcpy(bytes_.data() + start_, &n, sizeof(n));
    return *this;
  }
  std::vector<unsigned char>& bytes() { return bytes_; }

 private:
  std::vector<unsigned char> bytes_;
  size_t start_ = 0;
};

std::optional<int> Scan(std::vector<unsigned char>& bytes, std::vector<uint16_t>* replies = nullptr) {
  return ScanDcbMessages(bytes.data(), bytes.size(), 7, [&](nlmsghdr* h) {
    if (replies != nullptr) replies->push_back(h->nlmsg_type);
  });
}

TEST(ScanDcbMessages, HandsOverRepliesToTheRequestAndReturnsTheAck) {
  NetlinkBytes nl;
  nl.Msg(RTM_GETDCB, 6).Dcb(DCB_CMD_IEEE_GET).End();  // another request's
  nl.Msg(RTM_GETDCB, 7).Dcb(DCB_CMD_IEEE_GET).End();
  nlmsgerr ack{};
  nl.Msg(NLMSG_ERROR, 7).Append(&ack, sizeof(ack)).End();
  std::vector<uint16_t> replies;
  EXPECT_EQ(Scan(nl.bytes(), &replies), 0);
  EXPECT_THAT(replies, ElementsAre(RTM_GETDCB));
}

TEST(ScanDcbMessages, ReturnsTheKernelsErrnoAndNothingWithoutAnAck) {
  NetlinkBytes nl;
  nlmsgerr err{};
  err.error = -EOPNOTSUPP;
  nl.Msg(NLMSG_ERROR, 7).Append(&err, sizeof(err)).End();
  EXPECT_EQ(Scan(nl.bytes()), EOPNOTSUPP);

  NetlinkBytes reply_only;
  reply_only.Msg(RTM_GETDCB, 7).Dcb(DCB_CMD_IEEE_GET).End();
  EXPECT_EQ(Scan(reply_only.bytes()), std::nullopt);
}

TEST(ScanDcbMessages, ErrorMessageTooShortForItsCodeIsABadMessageNotAnAck) {
  // A bare header claims to be the NLMSG_ERROR; the zeros after it are not
  // part of it. Read as its code they would have made it an ack.
  NetlinkBytes nl;
  nl.Msg(NLMSG_ERROR, 7).End();
  const uint32_t zeros[5] = {};
  nl.Append(zeros, sizeof(zeros));
  EXPECT_EQ(Scan(nl.bytes()), EBADMSG);
}

TEST(ScanDcbMessages, ErrorCodeThatIsNoNegatedErrnoIsABadMessage) {
  for (int code : {INT_MIN, -4096, 1}) {
    NetlinkBytes nl;
    nlmsgerr err{};
    err.error = code;
    nl.Msg(NLMSG_ERROR, 7).Append(&err, sizeof(err)).End();
    EXPECT_EQ(Scan(nl.bytes()), EBADMSG) << code;
  }
}

TEST(ParseIeeeGetReply, ReadsEtsPfcAppTableAndDcbx) {
  NetlinkBytes ieee;
  ieee_ets ets{};
  ets.tc_tx_bw[0] = ets.tc_tx_bw[1] = 50;
  ets.prio_tc[3] = 1;
  ieee.Attr(DCB_ATTR_IEEE_ETS, &ets, sizeof(ets));
  ieee_pfc pfc{};
  pfc.pfc_en = 1 << 3;
  pfc.requests[3] = 12;
  ieee.Attr(DCB_ATTR_IEEE_PFC, &pfc, sizeof(pfc));
  NetlinkBytes table;
  dcb_app app{};
  app.selector = IEEE_8021QAZ_APP_SEL_DSCP;
  app.priority = 3;
  app.protocol = 26;
  table.Attr(DCB_ATTR_IEEE_APP, &app, sizeof(app));
  ieee.Attr(DCB_ATTR_IEEE_APP_TABLE, table.bytes().data(), table.bytes().size());

  NetlinkBytes nl;
  const uint8_t dcbx = DCB_CAP_DCBX_VER_IEEE;
  nl.Msg(RTM_GETDCB, 7).Dcb(DCB_CMD_IEEE_GET);
  nl.Attr(DCB_ATTR_IEEE, ieee.bytes().data(), ieee.bytes().size()).Attr(DCB_ATTR_DCBX, &dcbx, 1).End();
  DcbReading r;
  ASSERT_TRUE(ParseIeeeGetReply(reinterpret_cast<nlmsghdr*>(nl.bytes().data()), &r));
  ASSERT_TRUE(r.ets && r.pfc);
  EXPECT_EQ(r.ets->tc_tx_bw[1], 50);
  EXPECT_EQ(r.ets->prio_tc[3], 1);
  EXPECT_EQ(r.pfc->pfc_en, 1 << 3);
  EXPECT_EQ(r.pfc->requests[3], 12u);
  EXPECT_THAT(r.apps, ElementsAre(DcbApp{IEEE_8021QAZ_APP_SEL_DSCP, 3, 26}));
  EXPECT_EQ(r.dcbx, DCB_CAP_DCBX_VER_IEEE);
}

TEST(ParseIeeeGetReply, ReadsThePortBufferAndLeavesAShortOneOut) {
  dcbnl_buffer buf{};
  buf.prio2buffer[3] = 1;
  buf.buffer_size[0] = 262144;
  buf.buffer_size[1] = 131072;
  buf.total_size = 524288;
  for (size_t len : {sizeof(buf), sizeof(buf) - 4}) {
    NetlinkBytes ieee;
    ieee.Attr(DCB_ATTR_DCB_BUFFER, &buf, len);
    NetlinkBytes nl;
    nl.Msg(RTM_GETDCB, 7).Dcb(DCB_CMD_IEEE_GET).Attr(DCB_ATTR_IEEE, ieee.bytes().data(), ieee.bytes().size()).End();
    DcbReading r;
    ASSERT_TRUE(ParseIeeeGetReply(reinterpret_cast<nlmsghdr*>(nl.bytes().data()), &r));
    if (len < sizeof(buf)) {
      EXPECT_EQ(r.buffer.has_value(), false) << "a buffer attribute short of its struct";
      continue;
    }
    ASSERT_TRUE(r.buffer);
    EXPECT_EQ(r.buffer->prio2buffer, (std::array<uint8_t, 8>{0, 0, 0, 1, 0, 0, 0, 0}));
    EXPECT_EQ(r.buffer->buffer_size[1], 131072u);
    EXPECT_EQ(r.buffer->total_size, 524288u);
  }
}

// A driver whose firmware runs DCBX reports the link partner's settings as
// DCB_ATTR_IEEE_PEER_* (the peer app table as the kernel's
// dcbnl_build_peer_app lays it out: an info attribute, then the entries).
TEST(ParseIeeeGetReply, ReadsThePeersEtsPfcAndAppTable) {
  NetlinkBytes ieee;
  ieee_pfc own{};
  own.pfc_en = 1 << 3;
  ieee.Attr(DCB_ATTR_IEEE_PFC, &own, sizeof(own));
  ieee_ets peer_ets{};
  peer_ets.willing = 1;
  peer_ets.prio_tc[4] = 2;
  ieee.Attr(DCB_ATTR_IEEE_PEER_ETS, &peer_ets, sizeof(peer_ets));
  ieee_pfc peer_pfc{};
  peer_pfc.pfc_en = 1 << 4;
  peer_pfc.pfc_cap = 8;
  ieee.Attr(DCB_ATTR_IEEE_PEER_PFC, &peer_pfc, sizeof(peer_pfc));
  NetlinkBytes peer_table;
  dcb_peer_app_info info{};
  peer_table.Attr(DCB_ATTR_IEEE_APP_UNSPEC, &info, sizeof(info));
  dcb_app app{};
  app.selector = IEEE_8021QAZ_APP_SEL_DSCP;
  app.priority = 4;
  app.protocol = 26;
  peer_table.Attr(DCB_ATTR_IEEE_APP, &app, sizeof(app));
  ieee.Attr(DCB_ATTR_IEEE_PEER_APP, peer_table.bytes().data(), peer_table.bytes().size());
  NetlinkBytes nl;
  nl.Msg(RTM_GETDCB, 7).Dcb(DCB_CMD_IEEE_GET).Attr(DCB_ATTR_IEEE, ieee.bytes().data(), ieee.bytes().size()).End();
  DcbReading r;
  ASSERT_TRUE(ParseIeeeGetReply(reinterpret_cast<nlmsghdr*>(nl.bytes().data()), &r));
  ASSERT_TRUE(r.pfc && r.peer_pfc && r.peer_ets && r.peer_apps);
  EXPECT_EQ(r.pfc->pfc_en, 1 << 3);  // ours stays ours
  EXPECT_EQ(r.peer_pfc->pfc_en, 1 << 4);
  EXPECT_EQ(r.peer_pfc->pfc_cap, 8);
  EXPECT_TRUE(r.peer_ets->willing);
  EXPECT_EQ(r.peer_ets->prio_tc[4], 2);
  EXPECT_THAT(*r.peer_apps, ElementsAre(DcbApp{IEEE_8021QAZ_APP_SEL_DSCP, 4, 26}));
  EXPECT_TRUE(r.apps.empty());
  // Without peer attributes there is no peer view.
  NetlinkBytes plain;
  plain.Msg(RTM_GETDCB, 7).Dcb(DCB_CMD_IEEE_GET).End();
  DcbReading none;
  ASSERT_TRUE(ParseIeeeGetReply(reinterpret_cast<nlmsghdr*>(plain.bytes().data()), &none));
  EXPECT_FALSE(none.peer_pfc || none.peer_ets || none.peer_apps);
}

TEST(ParseIeeeGetReply, EmptyDcbxAttributeIsLeftOutNotReadPastTheMessage) {
  NetlinkBytes nl;
  nl.Msg(RTM_GETDCB, 7).Dcb(DCB_CMD_IEEE_GET).Attr(DCB_ATTR_DCBX, nullptr, 0).End();
  const uint8_t next = 0x5a;  // what follows the message in the buffer
  nl.Append(&next, 1);
  DcbReading r;
  ASSERT_TRUE(ParseIeeeGetReply(reinterpret_cast<nlmsghdr*>(nl.bytes().data()), &r));
  EXPECT_EQ(r.dcbx, std::nullopt);
}

TEST(ParseSetStatus, ReadsTheDriversStatusByteAsAPositiveErrno) {
  NetlinkBytes refused;
  const uint8_t einval = static_cast<uint8_t>(-EINVAL);
  refused.Msg(RTM_SETDCB, 7).Dcb(DCB_CMD_IEEE_SET).Attr(DCB_ATTR_IEEE, &einval, 1).End();
  EXPECT_EQ(ParseSetStatus(reinterpret_cast<nlmsghdr*>(refused.bytes().data())), EINVAL);

  // ice's success codes (ICE_DCB_NO_HW_CHG 1, ICE_DCB_HW_CHG 2): no errno
  // truncates to them, so they are success (0).
  for (uint8_t code : {1, 2}) {
    NetlinkBytes done;
    done.Msg(RTM_SETDCB, 7).Dcb(DCB_CMD_IEEE_DEL).Attr(DCB_ATTR_IEEE, &code, 1).End();
    EXPECT_EQ(ParseSetStatus(reinterpret_cast<nlmsghdr*>(done.bytes().data())), 0) << int{code};
  }
  const uint8_t odd = 100;  // no driver's success code; an errno over 128 truncated
  NetlinkBytes unknown;
  unknown.Msg(RTM_SETDCB, 7).Dcb(DCB_CMD_IEEE_SET).Attr(DCB_ATTR_IEEE, &odd, 1).End();
  EXPECT_EQ(ParseSetStatus(reinterpret_cast<nlmsghdr*>(unknown.bytes().data())), EPROTO);
  const uint8_t enoent = static_cast<uint8_t>(-ENOENT);
  NetlinkBytes missing;
  missing.Msg(RTM_SETDCB, 7).Dcb(DCB_CMD_IEEE_DEL).Attr(DCB_ATTR_IEEE, &enoent, 1).End();
  EXPECT_EQ(ParseSetStatus(reinterpret_cast<nlmsghdr*>(missing.bytes().data())), ENOENT);

  NetlinkBytes empty;
  empty.Msg(RTM_SETDCB, 7).Dcb(DCB_CMD_IEEE_SET).Attr(DCB_ATTR_IEEE, nullptr, 0).End();
  const uint8_t next = 0xea;
  empty.Append(&next, 1);
  EXPECT_EQ(ParseSetStatus(reinterpret_cast<nlmsghdr*>(empty.bytes().data())), std::nullopt);
}

TEST(ScanLinkEvents, CountsMessagesAndNamesEachKindOnce) {
  NetlinkBytes nl;
  ifinfomsg ifi{};
  nl.Msg(RTM_SETDCB, 0).Dcb(DCB_CMD_IEEE_SET).End();
  nl.Msg(RTM_NEWLINK, 0).Append(&ifi, sizeof(ifi)).End();
  ifaddrmsg ifa{};
  nl.Msg(RTM_NEWADDR, 0).Append(&ifa, sizeof(ifa)).End();
  nl.Msg(RTM_NEWLINK, 0).Append(&ifi, sizeof(ifi)).End();
  LinkEvents events = ScanLinkEvents(nl.bytes().data(), nl.bytes().size());
  EXPECT_EQ(events.messages, 4u);
  EXPECT_THAT(events.reasons,
              ::testing::ElementsAre("dcb change", "link change (newlink)", "address change"));

  NetlinkBytes del;
  del.Msg(RTM_DELLINK, 0).Append(&ifi, sizeof(ifi)).End();
  EXPECT_THAT(ScanLinkEvents(del.bytes().data(), del.bytes().size()).reasons,
              ::testing::ElementsAre("link change (dellink)"));
  // A message longer than what was received ends the walk.
  del.End(4096);
  EXPECT_EQ(ScanLinkEvents(del.bytes().data(), del.bytes().size()).messages, 0u);
}

TEST(ScanLinkEvents, AnAddressMessageIsAnAddressChange) {
  NetlinkBytes nl;
  ifaddrmsg ifa{};
  nl.Msg(RTM_NEWADDR, 0).Append(&ifa, sizeof(ifa)).End();
  EXPECT_THAT(ScanLinkEvents(nl.bytes().data(), nl.bytes().size()).reasons,
              ::testing::ElementsAre("address change"));
  NetlinkBytes del;
  del.Msg(RTM_DELADDR, 0).Append(&ifa, sizeof(ifa)).End();
  EXPECT_THAT(ScanLinkEvents(del.bytes().data(), del.bytes().size()).reasons,
              ::testing::ElementsAre("address change"));
}

TEST(ScanUevent, NamesRdmaDevicesAndIgnoresTheRest) {
  auto ev = [](const std::string& s) { return ScanUevent(s.data(), s.size()); };
  using namespace std::string_literals;
  // What rdma_rxe's registration sends (devices/virtual/infiniband/rxe0).
  EXPECT_EQ(ev("add@/devices/virtual/infiniband/rxe0\0ACTION=add\0DEVPATH=/devices/virtual/"
               "infiniband/rxe0\0SUBSYSTEM=infiniband\0NAME=rxe0\0SEQNUM=4242\0"s),
            "RDMA device add (rxe0)");
  EXPECT_EQ(ev("remove@/devices/pci0000:00/0000:00:04.0/infiniband_verbs/uverbs0\0ACTION=remove\0"
               "SUBSYSTEM=infiniband_verbs\0DEVNAME=infiniband/uverbs0\0"s),
            "RDMA device remove (infiniband/uverbs0)");
  EXPECT_EQ(ev("add@/devices/virtual/net/veth0\0ACTION=add\0SUBSYSTEM=net\0"s), std::nullopt);
  EXPECT_EQ(ev("libudev\0\xfe\xed\xca\xfe"s), std::nullopt);  // udev's own format
  EXPECT_EQ(ev(""), std::nullopt);
  EXPECT_EQ(ev("@"), std::nullopt);
  EXPECT_EQ(ev("add@/x"), std::nullopt);  // no SUBSYSTEM at all
  // A subsystem key that only starts like one is not it.
  EXPECT_EQ(ev("add@/x\0SUBSYSTEM=infinibandx\0"s), std::nullopt);
}

TEST(DecodeStatNames, CutsEachFixedWidthEntryAtItsNul) {
  std::string data(3 * 32, '\0');
  data.replace(0, 14, "rx_prio3_pause");
  data.replace(32, 32, std::string(32, 'x'));  // fills its entry: no NUL
  data.replace(64, 3, "tx_");
  EXPECT_THAT(DecodeStatNames(data.data(), data.size(), 3),
              ElementsAre("rx_prio3_pause", std::string(32, 'x'), "tx_"));
  // Only whole entries are read.
  EXPECT_THAT(DecodeStatNames(data.data(), 40, 3), ElementsAre("rx_prio3_pause"));
}

TEST(ParseHugepageDirName, ReadsThePageSizeOfPoolDirectoriesOnly) {
  EXPECT_EQ(ParseHugepageDirName("hugepages-2048kB"), 2048u);
  EXPECT_EQ(ParseHugepageDirName("hugepages-1048576kB"), 1048576u);
  EXPECT_EQ(ParseHugepageDirName("hugepages-kB"), std::nullopt);
  EXPECT_EQ(ParseHugepageDirName("hugepages-2048MB"), std::nullopt);
  EXPECT_EQ(ParseHugepageDirName("xhugepages-2048kB"), std::nullopt);
}

TEST(SysfsText, PhysStateNameAndPciAddress) {
  EXPECT_EQ(ParsePhysState("5: LinkUp"), "LinkUp");
  EXPECT_EQ(ParsePhysState("Disabled"), "Disabled");
  EXPECT_TRUE(LooksLikePciBdf("0000:3b:00.0"));
  EXPECT_TRUE(LooksLikePciBdf("10000:01:00.7"));  // VMD domain
  EXPECT_FALSE(LooksLikePciBdf("0000:3b:00.8"));
  EXPECT_FALSE(LooksLikePciBdf("mlx5_core.sf.2"));
}

// A DCB fixture file (roced --dcb-fixture) reads as the DcbReading that
// DCB_CMD_IEEE_GET would give for the same state.
TEST(DcbFixture, ReadsEveryKeyAsTheKernelWouldReportIt) {
  auto r = ParseDcbFixture(
      "# ens1f0 after lossless-prio3\n"
      "dcbx: host ieee\n"
      "ets.willing: 1\n"
      "ets.prio_tc: 0 0 0 1 0 0 0 0\n"
      "ets.tc_bw: 50 50 0 0 0 0 0 0\n"
      "ets.tsa: ets ets strict strict strict cbs vendor 255\n"
      "pfc.cap: 8\n"
      "pfc.enabled: 3 4   # two lossless classes\n"
      "pfc.delay: 7\n"
      "app.dscp: 26:3 48:6\n"
      "buffer.prio2buffer: 0 0 0 1 0 0 0 0\n"
      "buffer.size: 130944 130944 0 0 0 0 0 0\n"
      "buffer.total: 1048576\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->dcbx, std::optional<uint8_t>(DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE));
  EXPECT_TRUE(DcbxHostMode(*r->dcbx));
  ASSERT_TRUE(r->ets.has_value());
  EXPECT_TRUE(r->ets->willing);
  EXPECT_THAT(r->ets->prio_tc, ElementsAre(0, 0, 0, 1, 0, 0, 0, 0));
  EXPECT_THAT(r->ets->tc_tx_bw, ElementsAre(50, 50, 0, 0, 0, 0, 0, 0));
  EXPECT_THAT(r->ets->tc_tsa, ElementsAre(IEEE_8021QAZ_TSA_ETS, IEEE_8021QAZ_TSA_ETS, IEEE_8021QAZ_TSA_STRICT,
                                          IEEE_8021QAZ_TSA_STRICT, IEEE_8021QAZ_TSA_STRICT,
                                          IEEE_8021QAZ_TSA_CB_SHAPER, IEEE_8021QAZ_TSA_VENDOR, 255));
  ASSERT_TRUE(r->pfc.has_value());
  EXPECT_EQ(r->pfc->pfc_cap, 8);
  EXPECT_EQ(r->pfc->pfc_en, (1 << 3) | (1 << 4));
  EXPECT_EQ(r->pfc->delay, 7);
  EXPECT_THAT(r->apps, ElementsAre(DcbApp{kAppSelectorDscp, 3, 26}, DcbApp{kAppSelectorDscp, 6, 48}));
  ASSERT_TRUE(r->buffer.has_value());
  EXPECT_THAT(r->buffer->prio2buffer, ElementsAre(0, 0, 0, 1, 0, 0, 0, 0));
  EXPECT_EQ(r->buffer->buffer_size[1], 130944u);
  EXPECT_EQ(r->buffer->total_size, 1048576u);
}

// A key left out is an attribute the driver does not report; an empty
// priority list is PFC off; an empty app table is PCP trust.
TEST(DcbFixture, KeysLeftOutAreAttributesTheDriverDoesNotReport) {
  auto r = ParseDcbFixture("pfc.enabled:\napp.dscp:\n");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->pfc.has_value());
  EXPECT_EQ(r->pfc->pfc_en, 0);
  EXPECT_TRUE(r->apps.empty());
  EXPECT_FALSE(r->ets.has_value());
  EXPECT_FALSE(r->buffer.has_value());
  EXPECT_FALSE(r->dcbx.has_value());
}

// ethtool -i of a fixture netdev: its `driver:` line (name, then version),
// NOT_FOUND without one or without the file, never the host's netdev.
TEST(DcbFixture, DriverInfoComesFromTheDriverLine) {
  const std::string dir = ::testing::TempDir() + "/dcb-fixture-driver";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/eth7") << "# a port\ndcbx: host ieee\ndriver:  bnxt_en   6.1.0  # ethtool -i\n";
  std::ofstream(dir + "/eth8") << "dcbx: host ieee\n";
  DcbFixtureDriverInfo info(dir);
  absl::StatusOr<DriverInfo> d = info.Driver("eth7");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->driver, "bnxt_en");
  EXPECT_EQ(d->version, "6.1.0");
  EXPECT_TRUE(absl::IsNotFound(info.Driver("eth8").status()));
  EXPECT_TRUE(absl::IsNotFound(info.Driver("eth0").status())) << "no file: not the host's eth0";
  EXPECT_TRUE(DcbFixtureFiles(dir).Get("eth7").ok()) << "the DCB parser takes the driver line";
  // What could not go into a label or a protobuf string is replaced.
  std::ofstream(dir + "/eth9") << "driver: bnxt\xe9\xff " << std::string(300, 'v') << "\n";
  d = info.Driver("eth9");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->driver, "bnxt??");
  EXPECT_EQ(d->version, std::string(32, 'v'));
}

TEST(DcbFixture, RefusesWhatIsNotTheFormatNamingTheLine) {
  const std::pair<const char*, const char*> bad[] = {
      {"pfc.enabled: 3\npfc.enabled: 4\n", "line 2: pfc.enabled given twice"},
      {"ets.prio_tc: 0 0 0 1\n", "line 1: ets.prio_tc: 8 values wanted, got 4"},
      {"\n\nets.prio_tc: 0 0 0 8 0 0 0 0\n", "line 3: ets.prio_tc: '8' is not a number 0-7"},
      {"ets.tsa: ets ets wfq strict strict strict strict strict\n", "'wfq' is not strict, cbs, ets, vendor"},
      {"app.dscp: 64:3\n", "line 1: app.dscp: '64:3' is not DSCP:PRIORITY (0-63:0-7)"},
      {"pfc.enabled: 8\n", "'8' is not a number 0-7"},
      {"dcbx: host firmware\n", "'firmware' is not host, lld_managed, cee, ieee or static"},
      {"pfc.prio: 3\n", "line 1: pfc.prio: unknown key"},
      {"trust: dscp\n", "line 1: trust: unknown key (dcbx, ets.*, pfc.*, app.dscp, buffer.*, driver)"},
      {"pfc.enabled 3\n", "line 1: 'key: value' wanted"},
  };
  for (const auto& [text, message] : bad) {
    auto r = ParseDcbFixture(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr(message)) << text;
  }
}

// Read on every Get (a test edits the file to change the node); a netdev
// without a file has no DCB (as veth); writes are refused, the fixture is
// the test's.
TEST(DcbFixtureFiles, ReadsTheFileEachTimeAndRefusesWrites) {
  const std::string dir = roced::test_util::MakeTempDir("roced-dcbfix");
  DcbFixtureFiles dcb(dir);
  EXPECT_EQ(dcb.Get("ens1f0").status().code(), absl::StatusCode::kUnimplemented);
  std::ofstream(dir + "/ens1f0") << "pfc.enabled: 3\n";
  ASSERT_TRUE(dcb.Get("ens1f0").ok());
  EXPECT_EQ(dcb.Get("ens1f0")->pfc->pfc_en, 1 << 3);
  std::ofstream(dir + "/ens1f0") << "pfc.enabled: 4\n";
  EXPECT_EQ(dcb.Get("ens1f0")->pfc->pfc_en, 1 << 4);
  std::ofstream(dir + "/ens1f0") << "pfc.enabled: 9\n";
  EXPECT_THAT(std::string(dcb.Get("ens1f0").status().message()),
              ::testing::HasSubstr(dir + "/ens1f0: line 1: pfc.enabled"));
  absl::Status w = dcb.SetPfc("ens1f0", DcbPfc{});
  EXPECT_EQ(w.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(w.message()), ::testing::HasSubstr("is read-only"));
  EXPECT_EQ(dcb.AddApps("ens1f0", {}).code(), absl::StatusCode::kFailedPrecondition);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace roced::hal

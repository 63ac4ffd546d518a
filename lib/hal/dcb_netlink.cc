#include "hal/dcb_netlink.h"

#include <linux/dcbnl.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <functional>
#include <memory>

#include "absl/strings/str_cat.h"
#include "hal/rtnl.h"
#include "util/fs.h"

namespace roced::hal {
namespace {

// The largest errno the kernel reports (include/linux/err.h, MAX_ERRNO).
constexpr int kMaxErrno = 4095;

// A u8 attribute's value; nullopt when it has no payload. (nla_get_u8 reads
// the byte after the header whatever the length: past the message's end
// for an empty attribute at its end. nlmsg_parse without a policy checks
// no lengths.)
std::optional<uint8_t> U8(const nlattr* attr) {
  if (nla_len(attr) < 1) return std::nullopt;
  uint8_t v = 0;
  std::memcpy(&v, nla_data(attr), 1);
  return v;
}

// The kernel's struct ieee_ets and DcbEts name their fields alike; one copy
// serves both directions.
template <typename From, typename To>
void CopyEts(const From& from, To* to) {
  to->willing = from.willing;
  to->ets_cap = from.ets_cap;
  to->cbs = from.cbs;
  for (int i = 0; i < 8; ++i) {
    to->tc_tx_bw[i] = from.tc_tx_bw[i];
    to->tc_rx_bw[i] = from.tc_rx_bw[i];
    to->tc_tsa[i] = from.tc_tsa[i];
    to->prio_tc[i] = from.prio_tc[i];
    to->tc_reco_bw[i] = from.tc_reco_bw[i];
    to->tc_reco_tsa[i] = from.tc_reco_tsa[i];
    to->reco_prio_tc[i] = from.reco_prio_tc[i];
  }
}

using SockPtr = NlSockPtr;
using MsgPtr = NlMsgPtr;

absl::StatusOr<SockPtr> Connect() {
  SockPtr sock(nl_socket_alloc());
  if (!sock) return absl::ResourceExhaustedError("nl_socket_alloc failed");
  int rc = nl_connect(sock.get(), NETLINK_ROUTE);
  if (rc < 0) return absl::UnavailableError(absl::StrCat("netlink connect: ", nl_geterror(rc)));
  return sock;
}

MsgPtr NewRequest(int type, uint8_t cmd, const std::string& ifname) {
  MsgPtr msg(nlmsg_alloc_simple(type, NLM_F_REQUEST | NLM_F_ACK));
  if (!msg) return msg;
  struct dcbmsg hdr {};
  hdr.dcb_family = AF_UNSPEC;
  hdr.cmd = cmd;
  if (nlmsg_append(msg.get(), &hdr, sizeof(hdr), NLMSG_ALIGNTO) < 0 ||
      nla_put_string(msg.get(), DCB_ATTR_IFNAME, ifname.c_str()) < 0) {
    msg.reset();
  }
  return msg;
}

// Sends `msg` and reads until the kernel's ack (or error) for it. The DCB
// reply, if any, is handed to `on_reply`. Returns the errno the kernel put
// in its NLMSG_ERROR (0 on success) or a status for transport failures.
absl::StatusOr<int> Transact(nl_sock* sock, nl_msg* msg,
                             const std::function<void(nlmsghdr*)>& on_reply) {
  int rc = nl_send_auto(sock, msg);
  if (rc < 0) return absl::UnavailableError(absl::StrCat("netlink send: ", nl_geterror(rc)));
  const uint32_t seq = nlmsg_hdr(msg)->nlmsg_seq;
  while (true) {
    sockaddr_nl peer{};
    unsigned char* buf = nullptr;
    int n = nl_recv(sock, &peer, &buf, nullptr);
    if (n <= 0) {
      free(buf);
      return absl::UnavailableError(absl::StrCat("netlink recv: ", n < 0 ? nl_geterror(n) : "eof"));
    }
    std::unique_ptr<unsigned char, decltype(&free)> owned(buf, &free);
    if (std::optional<int> err = ScanDcbMessages(buf, static_cast<size_t>(n), seq, on_reply)) return *err;
  }
}

absl::Status KernelError(int err, const std::string& what, const std::string& ifname) {
  if (err == EOPNOTSUPP) {
    return absl::UnimplementedError(absl::StrCat(ifname, ": ", what, ": the driver has no DCB support (EOPNOTSUPP)"));
  }
  if (err == ENODEV) return absl::NotFoundError(absl::StrCat(ifname, ": no such interface"));
  return util::ErrnoToStatus(err, absl::StrCat(ifname, ": ", what));
}

// Runs a SET/DEL and interprets both the ack and the status byte.
absl::Status RunSet(nl_msg* msg, const std::string& what, const std::string& ifname) {
  auto sock = Connect();
  if (!sock.ok()) return sock.status();
  int status_byte_err = 0;
  bool saw_status = false;
  auto rc = Transact(sock->get(), msg, [&](nlmsghdr* hdr) {
    if (std::optional<int> err = ParseSetStatus(hdr)) {
      status_byte_err = *err;
      saw_status = true;
    }
  });
  if (!rc.ok()) return rc.status();
  if (*rc != 0) return KernelError(*rc, what, ifname);
  if (saw_status && status_byte_err != 0) {
    return KernelError(status_byte_err, absl::StrCat(what, " refused by the driver"), ifname);
  }
  return absl::OkStatus();
}

}  // namespace

std::optional<int> ScanDcbMessages(void* buf, size_t len, uint32_t seq,
                                   const std::function<void(nlmsghdr*)>& on_reply) {
  int remaining = static_cast<int>(std::min<size_t>(len, INT_MAX));
  for (auto* hdr = static_cast<nlmsghdr*>(buf); nlmsg_ok(hdr, remaining); hdr = nlmsg_next(hdr, &remaining)) {
    if (hdr->nlmsg_seq != seq) continue;
    if (hdr->nlmsg_type == NLMSG_ERROR) {
      // The kernel always sends the whole struct nlmsgerr, with 0 or a
      // negated errno (-4095..-1). A shorter message has no code to read,
      // and another value is no errno (and INT_MIN cannot be negated):
      // both found by tests/fuzz/netlink.
      if (hdr->nlmsg_len < static_cast<uint32_t>(nlmsg_size(sizeof(nlmsgerr)))) return EBADMSG;
      const int error = static_cast<const nlmsgerr*>(nlmsg_data(hdr))->error;
      if (error > 0 || error < -kMaxErrno) return EBADMSG;
      return -error;
    }
    if (hdr->nlmsg_type == RTM_GETDCB || hdr->nlmsg_type == RTM_SETDCB) on_reply(hdr);
  }
  return std::nullopt;
}

std::optional<int> ParseSetStatus(nlmsghdr* reply) {
  nlattr* tb[DCB_ATTR_MAX + 1] = {};
  if (nlmsg_parse(reply, sizeof(dcbmsg), tb, DCB_ATTR_MAX, nullptr) < 0) return std::nullopt;
  if (!tb[DCB_ATTR_IEEE]) return std::nullopt;
  // A u8 holding what the driver's op returned, truncated: a negative
  // errno read back as signed. ice also returns ICE_DCB_NO_HW_CHG (1) and
  // ICE_DCB_HW_CHG (2) (ice_dcbnl_setapp, ice_dcbnl_delapp): the request
  // was taken (1 from setapp can also hide a failed commit, which the
  // read-back then shows). Any other positive value, which an errno above
  // 128 would truncate to, is not known to mean success: EPROTO.
  std::optional<uint8_t> status = U8(tb[DCB_ATTR_IEEE]);
  if (!status) return std::nullopt;
  const int8_t value = static_cast<int8_t>(*status);
  if (value == 1 || value == 2) return 0;
  return value > 0 ? EPROTO : -value;
}

namespace {

std::optional<DcbEts> EtsAttr(nlattr* attr) {
  if (attr == nullptr || nla_len(attr) < static_cast<int>(sizeof(ieee_ets))) return std::nullopt;
  ieee_ets k;
  std::memcpy(&k, nla_data(attr), sizeof(k));
  DcbEts e;
  CopyEts(k, &e);
  return e;
}

std::optional<DcbPfc> PfcAttr(nlattr* attr) {
  if (attr == nullptr || nla_len(attr) < static_cast<int>(sizeof(ieee_pfc))) return std::nullopt;
  ieee_pfc k;
  std::memcpy(&k, nla_data(attr), sizeof(k));
  DcbPfc p;
  p.pfc_cap = k.pfc_cap;
  p.pfc_en = k.pfc_en;
  p.mbc = k.mbc;
  p.delay = k.delay;
  for (int i = 0; i < 8; ++i) {
    p.requests[i] = k.requests[i];
    p.indications[i] = k.indications[i];
  }
  return p;
}

// The DCB_ATTR_IEEE_APP entries of an app table (ours, or the peer's).
std::vector<DcbApp> AppsAttr(nlattr* table) {
  std::vector<DcbApp> apps;
  nlattr* attr;
  int rem;
  nla_for_each_nested(attr, table, rem) {
    if (nla_type(attr) != DCB_ATTR_IEEE_APP || nla_len(attr) < static_cast<int>(sizeof(dcb_app))) continue;
    dcb_app app;
    std::memcpy(&app, nla_data(attr), sizeof(app));
    apps.push_back({app.selector, app.priority, app.protocol});
  }
  return apps;
}

void ParseIeeeAttrs(nlattr* nested, DcbReading* reading) {
  nlattr* ieee[DCB_ATTR_IEEE_MAX + 1] = {};
  if (nla_parse_nested(ieee, DCB_ATTR_IEEE_MAX, nested, nullptr) < 0) return;
  reading->ets = EtsAttr(ieee[DCB_ATTR_IEEE_ETS]);
  reading->pfc = PfcAttr(ieee[DCB_ATTR_IEEE_PFC]);
  if (ieee[DCB_ATTR_DCB_BUFFER] && nla_len(ieee[DCB_ATTR_DCB_BUFFER]) >= static_cast<int>(sizeof(dcbnl_buffer))) {
    dcbnl_buffer k;
    std::memcpy(&k, nla_data(ieee[DCB_ATTR_DCB_BUFFER]), sizeof(k));
    DcbBuffer b;
    for (int i = 0; i < 8; ++i) {
      b.prio2buffer[i] = k.prio2buffer[i];
      b.buffer_size[i] = k.buffer_size[i];
    }
    b.total_size = k.total_size;
    reading->buffer = b;
  }
  if (ieee[DCB_ATTR_IEEE_APP_TABLE]) reading->apps = AppsAttr(ieee[DCB_ATTR_IEEE_APP_TABLE]);
  reading->peer_ets = EtsAttr(ieee[DCB_ATTR_IEEE_PEER_ETS]);
  reading->peer_pfc = PfcAttr(ieee[DCB_ATTR_IEEE_PEER_PFC]);
  if (ieee[DCB_ATTR_IEEE_PEER_APP]) reading->peer_apps = AppsAttr(ieee[DCB_ATTR_IEEE_PEER_APP]);
}

}  // namespace

bool ParseIeeeGetReply(nlmsghdr* reply, DcbReading* reading) {
  nlattr* tb[DCB_ATTR_MAX + 1] = {};
  if (nlmsg_parse(reply, sizeof(dcbmsg), tb, DCB_ATTR_MAX, nullptr) < 0) return false;
  if (tb[DCB_ATTR_DCBX]) reading->dcbx = U8(tb[DCB_ATTR_DCBX]);
  if (tb[DCB_ATTR_IEEE]) ParseIeeeAttrs(tb[DCB_ATTR_IEEE], reading);
  return true;
}

absl::StatusOr<DcbReading> DcbNetlink::Get(const std::string& ifname) const {
  auto sock = Connect();
  if (!sock.ok()) return sock.status();
  MsgPtr msg = NewRequest(RTM_GETDCB, DCB_CMD_IEEE_GET, ifname);
  if (!msg) return absl::InternalError("cannot build DCB_CMD_IEEE_GET");
  DcbReading reading;
  bool got = false;
  auto rc = Transact(sock->get(), msg.get(), [&](nlmsghdr* hdr) {
    if (ParseIeeeGetReply(hdr, &reading)) got = true;
  });
  if (!rc.ok()) return rc.status();
  if (*rc != 0) return KernelError(*rc, "DCB_CMD_IEEE_GET", ifname);
  if (!got) return absl::InternalError(absl::StrCat(ifname, ": DCB_CMD_IEEE_GET gave no reply"));
  return reading;
}

namespace {
// Builds IEEE_SET with one nested attribute of `size` bytes.
absl::Status SetOne(const std::string& ifname, int attr, const void* data, size_t size,
                    const char* what) {
  MsgPtr msg = NewRequest(RTM_SETDCB, DCB_CMD_IEEE_SET, ifname);
  if (!msg) return absl::InternalError("cannot build DCB_CMD_IEEE_SET");
  nlattr* nest = nla_nest_start(msg.get(), DCB_ATTR_IEEE);
  if (nest == nullptr || nla_put(msg.get(), attr, static_cast<int>(size), data) < 0) {
    return absl::InternalError("cannot build DCB_CMD_IEEE_SET");
  }
  nla_nest_end(msg.get(), nest);
  return RunSet(msg.get(), what, ifname);
}

absl::Status AppCommand(const std::string& ifname, const std::vector<DcbApp>& apps, uint8_t cmd,
                        const char* what) {
  if (apps.empty()) return absl::OkStatus();
  MsgPtr msg = NewRequest(RTM_SETDCB, cmd, ifname);
  if (!msg) return absl::InternalError("cannot build DCB app request");
  nlattr* ieee = nla_nest_start(msg.get(), DCB_ATTR_IEEE);
  nlattr* table = ieee ? nla_nest_start(msg.get(), DCB_ATTR_IEEE_APP_TABLE) : nullptr;
  if (table == nullptr) return absl::InternalError("cannot build DCB app request");
  for (const DcbApp& a : apps) {
    dcb_app app{};
    app.selector = a.selector;
    app.priority = a.priority;
    app.protocol = a.protocol;
    if (nla_put(msg.get(), DCB_ATTR_IEEE_APP, sizeof(app), &app) < 0) {
      return absl::InternalError("DCB app request too large");
    }
  }
  nla_nest_end(msg.get(), table);
  nla_nest_end(msg.get(), ieee);
  return RunSet(msg.get(), what, ifname);
}
}  // namespace

absl::Status DcbNetlink::SetEts(const std::string& ifname, const DcbEts& e) const {
  ieee_ets k{};
  CopyEts(e, &k);
  return SetOne(ifname, DCB_ATTR_IEEE_ETS, &k, sizeof(k), "set ETS");
}

absl::Status DcbNetlink::SetPfc(const std::string& ifname, const DcbPfc& p) const {
  ieee_pfc k{};
  k.pfc_cap = p.pfc_cap;
  k.pfc_en = p.pfc_en;
  k.mbc = p.mbc;
  k.delay = p.delay;
  return SetOne(ifname, DCB_ATTR_IEEE_PFC, &k, sizeof(k), "set PFC");
}

absl::Status DcbNetlink::SetBuffer(const std::string& ifname, const DcbBuffer& b) const {
  dcbnl_buffer k{};
  for (int i = 0; i < 8; ++i) {
    k.prio2buffer[i] = b.prio2buffer[i];
    k.buffer_size[i] = b.buffer_size[i];
  }
  return SetOne(ifname, DCB_ATTR_DCB_BUFFER, &k, sizeof(k), "set port buffer");
}

bool DcbxHostMode(uint8_t dcbx) {
  return (dcbx & DCB_CAP_DCBX_HOST) != 0 && (dcbx & DCB_CAP_DCBX_LLD_MANAGED) == 0;
}

absl::Status DcbNetlink::SetDcbx(const std::string& ifname, uint8_t mode) const {
  MsgPtr msg = NewRequest(RTM_SETDCB, DCB_CMD_SDCBX, ifname);
  if (!msg || nla_put_u8(msg.get(), DCB_ATTR_DCBX, mode) < 0) return absl::InternalError("cannot build DCB_CMD_SDCBX");
  auto sock = Connect();
  if (!sock.ok()) return sock.status();
  // The reply's DCB_ATTR_DCBX is the driver's answer: 0 taken, else refused.
  std::optional<uint8_t> answer;
  auto rc = Transact(sock->get(), msg.get(), [&](nlmsghdr* hdr) {
    nlattr* tb[DCB_ATTR_MAX + 1] = {};
    if (nlmsg_parse(hdr, sizeof(dcbmsg), tb, DCB_ATTR_MAX, nullptr) == 0 && tb[DCB_ATTR_DCBX]) {
      answer = U8(tb[DCB_ATTR_DCBX]);
    }
  });
  if (!rc.ok()) return rc.status();
  if (*rc != 0) return KernelError(*rc, "set DCBX mode", ifname);
  if (answer.value_or(0) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(ifname, ": the driver refused DCBX mode 0x", absl::Hex(mode), " (setdcbx)"));
  }
  return absl::OkStatus();
}

absl::Status DcbNetlink::AddApps(const std::string& ifname, const std::vector<DcbApp>& apps) const {
  return AppCommand(ifname, apps, DCB_CMD_IEEE_SET, "add app-table entries");
}

absl::Status DcbNetlink::DelApps(const std::string& ifname, const std::vector<DcbApp>& apps) const {
  return AppCommand(ifname, apps, DCB_CMD_IEEE_DEL, "delete app-table entries");
}

}  // namespace roced::hal

// DCB netlink (rtnetlink RTM_GETDCB / RTM_SETDCB, IEEE 802.1Qaz commands):
// PFC, ETS and the DSCP application table of one netdev. Messages are built
// and parsed with libnl; each call uses its own socket, so the class is
// thread-safe and holds no kernel state.
//
// The kernel acknowledges every SET with 0 even when the driver refused it;
// the real outcome is a status byte (a negative errno) in the reply's
// DCB_ATTR_IEEE attribute. Every Set*/Add*/Del* here reads it, and maps a
// refusal to an error naming the netdev and the operation. The kernel also
// skips ops a driver lacks without saying so: callers verify by reading back.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

struct nlmsghdr;

namespace roced::hal {

struct DcbEts {
  bool willing = false;
  uint8_t ets_cap = 0;
  uint8_t cbs = 0;
  std::array<uint8_t, 8> tc_tx_bw{};
  std::array<uint8_t, 8> tc_rx_bw{};
  std::array<uint8_t, 8> tc_tsa{};  // 0 strict, 1 CB shaper, 2 ETS, 255 vendor
  std::array<uint8_t, 8> prio_tc{};
  std::array<uint8_t, 8> tc_reco_bw{};
  std::array<uint8_t, 8> tc_reco_tsa{};
  std::array<uint8_t, 8> reco_prio_tc{};
};

struct DcbPfc {
  uint8_t pfc_cap = 0;
  uint8_t pfc_en = 0;  // bit N = priority N
  uint8_t mbc = 0;
  uint16_t delay = 0;
  std::array<uint64_t, 8> requests{};     // PFC frames sent, per priority
  std::array<uint64_t, 8> indications{};  // PFC frames received, per priority
};

// struct dcbnl_buffer: the port's receive buffers (mlnx_qos --prio2buffer
// --buffer_size, `dcb buffer`).
struct DcbBuffer {
  std::array<uint8_t, 8> prio2buffer{};   // priority -> buffer 0-7
  std::array<uint32_t, 8> buffer_size{};  // bytes
  uint32_t total_size = 0;                // the port's whole buffer (read only)
};

struct DcbApp {
  uint8_t selector = 0;  // 5 = DSCP
  uint8_t priority = 0;
  uint16_t protocol = 0;  // the DSCP value for selector 5
  bool operator==(const DcbApp&) const = default;
};

struct DcbReading {
  std::optional<DcbEts> ets;  // absent when the driver has no getets
  std::optional<DcbPfc> pfc;  // absent when the driver has no getpfc
  std::vector<DcbApp> apps;   // the IEEE application table
  std::optional<uint8_t> dcbx;
  std::optional<DcbBuffer> buffer;  // absent when the driver has no getbuffer
  // What the driver learned from the link partner (DCB_ATTR_IEEE_PEER_*),
  // where its firmware runs DCBX itself: absent when it reports none.
  std::optional<DcbEts> peer_ets;
  std::optional<DcbPfc> peer_pfc;
  std::optional<std::vector<DcbApp>> peer_apps;
};

inline constexpr uint8_t kAppSelectorDscp = 5;

// Whether getdcbx's mode bits say the host runs DCBX: HOST set and not
// LLD_MANAGED (without HOST the NIC's firmware runs it, mlx5's non-host
// mode; LLD_MANAGED means an LLDP agent does).
bool DcbxHostMode(uint8_t dcbx);

// One netdev's DCB state, read and written: DcbNetlink on a kernel, and
// DcbFixtureFiles (dcb_fixture_files.h) for a fixture tree, where no kernel
// holds the netdevs. Implementations are thread-safe.
class Dcb {
 public:
  virtual ~Dcb() = default;
  // UNIMPLEMENTED when the netdev has no DCB support (EOPNOTSUPP), NOT_FOUND
  // when it does not exist.
  virtual absl::StatusOr<DcbReading> Get(const std::string& ifname) const = 0;

  virtual absl::Status SetEts(const std::string& ifname, const DcbEts& ets) const = 0;
  virtual absl::Status SetPfc(const std::string& ifname, const DcbPfc& pfc) const = 0;
  // DCB_ATTR_DCB_BUFFER; total_size is the driver's and not sent.
  virtual absl::Status SetBuffer(const std::string& ifname, const DcbBuffer& buffer) const = 0;
  // DCB_CMD_SDCBX: the DCBX mode bits (DCB_CAP_DCBX_*; 0 hands DCBX to the
  // NIC's firmware on mlx5). FAILED_PRECONDITION when the driver refuses.
  virtual absl::Status SetDcbx(const std::string& ifname, uint8_t mode) const = 0;
  // Adds application-table entries (DCB_CMD_IEEE_SET with an APP_TABLE).
  virtual absl::Status AddApps(const std::string& ifname, const std::vector<DcbApp>& apps) const = 0;
  // Deletes entries (DCB_CMD_IEEE_DEL).
  virtual absl::Status DelApps(const std::string& ifname, const std::vector<DcbApp>& apps) const = 0;
};

// Dcb through the kernel's DCB netlink, in the caller's network namespace.
class DcbNetlink final : public Dcb {
 public:
  absl::StatusOr<DcbReading> Get(const std::string& ifname) const override;
  absl::Status SetEts(const std::string& ifname, const DcbEts& ets) const override;
  absl::Status SetPfc(const std::string& ifname, const DcbPfc& pfc) const override;
  absl::Status SetBuffer(const std::string& ifname, const DcbBuffer& buffer) const override;
  absl::Status SetDcbx(const std::string& ifname, uint8_t mode) const override;
  absl::Status AddApps(const std::string& ifname, const std::vector<DcbApp>& apps) const override;
  absl::Status DelApps(const std::string& ifname, const std::vector<DcbApp>& apps) const override;
};

// What the kernel sends back, parsed from the bytes alone (Get and the
// setters use these on every recv; tests and the fuzz target hand them
// arbitrary bytes). Nothing here trusts a length it has not checked against
// the buffer.
//
// Walks the netlink messages in `buf` (`len` bytes, one recv): DCB replies
// (RTM_GETDCB, RTM_SETDCB) carrying `seq` go to `on_reply`, others are
// skipped. Returns the errno of the NLMSG_ERROR for `seq` (0: the ack), or
// nullopt when the buffer ends without one (the caller reads on); EBADMSG
// for an NLMSG_ERROR too short to hold its error code, or whose code is no
// negated errno.
std::optional<int> ScanDcbMessages(void* buf, size_t len, uint32_t seq,
                                   const std::function<void(nlmsghdr*)>& on_reply);

// Fills `reading` from a DCB_CMD_IEEE_GET reply: what of ETS, PFC, the app
// table, the port buffer and the DCBX mode it carries (an attribute too short for its
// struct is left out). False when the message is not a DCB message.
bool ParseIeeeGetReply(nlmsghdr* reply, DcbReading* reading);

// The driver's status byte in a SET/DEL reply (DCB_ATTR_IEEE: a negative
// errno truncated to u8) as a positive errno, 0 for success; nullopt when
// the reply carries none.
std::optional<int> ParseSetStatus(nlmsghdr* reply);

}  // namespace roced::hal

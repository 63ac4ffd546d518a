// DCB state of a fixture tree's netdevs, from files (roced --dcb-fixture
// DIR). A fixture sysfs tree has no kernel behind its netdevs, and no
// virtual netdev a test can make (veth, dummy, netdevsim) implements dcbnl,
// so without this a fixture shows no DCB at all; the DCB netlink path itself
// is tested against the lab's DCB test NIC.
//
// DIR/<netdev> holds what DCB_CMD_IEEE_GET would report, one `key: value`
// line each ('#' starts a comment; a key left out is an attribute the driver
// does not report, a file left out a netdev without DCB):
//
//   dcbx: host ieee                # DCB_CAP_DCBX_* words: host lld_managed cee ieee static
//   ets.willing: 0
//   ets.prio_tc: 0 0 0 1 0 0 0 0   # eight values each
//   ets.tc_bw: 50 50 0 0 0 0 0 0
//   ets.tsa: ets ets strict strict strict strict strict strict   # or cbs, vendor, a number
//   pfc.cap: 8
//   pfc.enabled: 3                 # priorities with PFC on (none: empty)
//   pfc.delay: 0
//   app.dscp: 26:3 48:6            # DSCP:priority entries of the app table
//   buffer.prio2buffer: 0 0 0 1 0 0 0 0
//   buffer.size: 130944 130944 0 0 0 0 0 0
//   buffer.total: 1048576
//   driver: bnxt_en 6.1.0          # ethtool -i's driver and version (DcbFixtureDriverInfo)
//
// The files are read on every Get, so a test changes the node by editing
// them. Writes are refused (FAILED_PRECONDITION): the fixture is the test's,
// not the agent's. Thread-safe; stateless but for the directory.
#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "hal/dcb_netlink.h"
#include "hal/ethtool_info.h"

namespace roced::hal {

// The most a fixture file may hold.
inline constexpr size_t kMaxDcbFixtureBytes = 64u << 10;

// A fixture file's text as a DcbReading. INVALID_ARGUMENT naming the line
// and what is wrong (an unknown key, a value out of range, a count other
// than eight).
absl::StatusOr<DcbReading> ParseDcbFixture(absl::string_view text);

class DcbFixtureFiles final : public Dcb {
 public:
  explicit DcbFixtureFiles(std::string dir) : dir_(std::move(dir)) {}

  // UNIMPLEMENTED when DIR/<netdev> does not exist (no DCB, as veth);
  // INVALID_ARGUMENT naming the file when it does not parse.
  absl::StatusOr<DcbReading> Get(const std::string& ifname) const override;
  absl::Status SetEts(const std::string& ifname, const DcbEts& ets) const override;
  absl::Status SetPfc(const std::string& ifname, const DcbPfc& pfc) const override;
  absl::Status SetBuffer(const std::string& ifname, const DcbBuffer& buffer) const override;
  absl::Status SetDcbx(const std::string& ifname, uint8_t mode) const override;
  absl::Status AddApps(const std::string& ifname, const std::vector<DcbApp>& apps) const override;
  absl::Status DelApps(const std::string& ifname, const std::vector<DcbApp>& apps) const override;

 private:
  absl::Status ReadOnly(const std::string& ifname, absl::string_view what) const;

  const std::string dir_;
};

// ethtool -i of a fixture tree's netdevs: the `driver:` line of DIR/<netdev>
// ("NAME [VERSION]", each as DriverInfoText keeps it); NOT_FOUND without one.
class DcbFixtureDriverInfo final : public EthtoolInfo {
 public:
  explicit DcbFixtureDriverInfo(std::string dir) : dir_(std::move(dir)) {}
  absl::StatusOr<DriverInfo> Driver(const std::string& netdev) const override;

 private:
  const std::string dir_;
};

}  // namespace roced::hal

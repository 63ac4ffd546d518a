// What `ethtool -i` and `ethtool --show-priv-flags` report of a netdev: the
// driver's name and version and the firmware version (ETHTOOL_GDRVINFO),
// and the driver's private flags by name (ETH_SS_PRIV_FLAGS strings with
// ETHTOOL_GPFLAGS), through the SIOCETHTOOL ioctl. ice's fw-lldp-agent flag
// (the NIC's firmware LLDP agent owns DCB while it is on) is read so.
//
// Needs no capability. Stateless: each call opens its own socket, in the
// network namespace of the calling thread. Thread-safe.
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace roced::hal {

struct DriverInfo {
  std::string driver;            // "mlx5_core", "bnxt_en", "ice", "virtio_net"
  std::string version;           // in-tree drivers: the kernel's release
  std::string firmware_version;  // "" when the driver reports none
  std::string bus_info;          // "0000:3b:00.0"
};

class EthtoolInfo {
 public:
  virtual ~EthtoolInfo() = default;
  // NOT_FOUND: no such netdev; UNIMPLEMENTED: the driver has no drvinfo.
  virtual absl::StatusOr<DriverInfo> Driver(const std::string& netdev) const;
  // Every private flag of the netdev's driver, on or off; empty when the
  // driver has none.
  virtual absl::StatusOr<std::map<std::string, bool>> PrivateFlags(const std::string& netdev) const;
};

}  // namespace roced::hal

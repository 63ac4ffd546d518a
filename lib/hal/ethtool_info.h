// What `ethtool -i` reports of a netdev: the driver's name and version and
// the firmware version (ETHTOOL_GDRVINFO), through the SIOCETHTOOL ioctl.
// Each string is kept to printable ASCII, at most 32 bytes (the kernel's
// fields are 32 bytes; firmware fills some of them): anything else becomes
// '?', so the values can go into protobuf strings and metric labels.
//
// Needs no capability. Stateless: each call opens its own socket, in the
// network namespace of the calling thread. Thread-safe.
#pragma once

#include <string>
#include <string_view>

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
};

// `s` as printable ASCII ('?' for any other byte), cut at 32 bytes.
std::string DriverInfoText(std::string_view s);

// One SIOCETHTOOL request for `netdev` (`data`: the ethtool command's
// struct), on a socket of its own in the calling thread's network namespace.
// INVALID_ARGUMENT for a name that is not 1-15 bytes; UNIMPLEMENTED when the
// driver answers EOPNOTSUPP; else the errno, `what` naming the request.
absl::Status EthtoolIoctl(const std::string& netdev, void* data, const char* what);

}  // namespace roced::hal

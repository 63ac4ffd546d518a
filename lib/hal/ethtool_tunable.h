// The NIC's PFC storm prevention timeout, as `ethtool --show-tunable DEV
// pfc-prevention-tout` reads and `--set-tunable` writes it: the SIOCETHTOOL
// ioctl ETHTOOL_GTUNABLE / ETHTOOL_STUNABLE with tunable id
// ETHTOOL_PFC_PREVENTION_TOUT (a u16 of milliseconds; 0 disabled, 0xffff
// "auto", the driver's own timeout). Kernel 6.1's ethtool netlink has no
// tunables, so the ioctl is the only way in.
//
// A driver without the tunable (no get_tunable op, or mlx5 without the
// PCAM pfcc_mask and stall-detect capabilities) answers EOPNOTSUPP:
// UNIMPLEMENTED here, kept distinct from NOT_FOUND (no such netdev). mlx5
// reads "auto" back as the timeout it chose (100 ms). Reading needs no
// capability, writing CAP_NET_ADMIN.
//
// Stateless: each call opens its own socket, in the network namespace of
// the calling thread. Thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace roced::hal {

class EthtoolTunable {
 public:
  absl::StatusOr<uint16_t> GetPfcPreventionTimeout(const std::string& netdev) const;
  absl::Status SetPfcPreventionTimeout(const std::string& netdev, uint16_t timeout_ms) const;
};

}  // namespace roced::hal

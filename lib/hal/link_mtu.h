// Netdev MTU through rtnetlink (libnl-route), in the caller's network
// namespace. Thread-safe; each call opens its own socket.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace roced::hal {

class LinkMtu {
 public:
  // NOT_FOUND when the netdev does not exist.
  absl::StatusOr<uint32_t> Get(const std::string& ifname) const;
  // RTM_NEWLINK with IFLA_MTU. The kernel checks the driver's min/max MTU;
  // a refusal comes back as INVALID_ARGUMENT naming the netdev and value.
  absl::Status Set(const std::string& ifname, uint32_t mtu) const;
  bool Exists(const std::string& ifname) const;
};

}  // namespace roced::hal

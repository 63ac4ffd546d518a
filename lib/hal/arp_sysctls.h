// The IPv4 sysctls that decide which port answers ARP and which source a
// reply may arrive on, per netdev and for conf/all:
//   <procfs>/sys/net/ipv4/conf/<ifname|all>/{arp_ignore,arp_announce,rp_filter}
// The kernel uses the larger of the netdev's and conf/all's value for all
// three (IN_DEV_MAXCONF). /proc/sys/net shows the reading thread's network
// namespace. Stateless, thread-safe.
#pragma once

#include <optional>
#include <string>

#include "hal/paths.h"

namespace roced::hal {

struct ArpSysctls {
  // nullopt: the file is absent or unreadable.
  std::optional<int> arp_ignore;
  std::optional<int> arp_announce;
  std::optional<int> rp_filter;
};

// `conf` is a netdev name or "all".
ArpSysctls ReadArpSysctls(const Paths& paths, const std::string& conf);

// What the kernel acts on: the larger of the netdev's and conf/all's value
// (nullopt when either is unknown).
ArpSysctls EffectiveArpSysctls(const ArpSysctls& netdev, const ArpSysctls& all);

}  // namespace roced::hal

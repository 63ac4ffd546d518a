// A netdev's neighbour table (ARP for IPv4, NDP for IPv6) and its IP
// addresses, read over rtnetlink (RTM_GETNEIGH, RTM_GETADDR dumps) in the
// calling thread's network namespace. RoCE v2 connection set-up resolves
// the peer's MAC through this table, so an unresolved peer fails there
// with errors that point at GIDs instead. Thread-safe; each call opens its
// own socket.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace roced::hal {

struct Neighbour {
  std::string ip;      // as text, 10.0.0.12 or fe80::1
  uint16_t state = 0;  // NUD_* bits (linux/neighbour.h)
  std::string lladdr;  // MAC, empty while unresolved
};

// True for the states in which the kernel has a MAC to send to:
// REACHABLE, STALE, DELAY, PROBE, PERMANENT, NOARP. INCOMPLETE (asking),
// FAILED (nobody answered) and NONE are not.
bool NeighbourResolved(uint16_t state);
// The state's name as `ip neigh` prints it (REACHABLE, FAILED, ...).
std::string NeighbourStateName(uint16_t state);

// Every entry of `ifname`'s table; NOT_FOUND when the netdev does not
// exist.
absl::StatusOr<std::vector<Neighbour>> ListNeighbours(const std::string& ifname);

struct IpAddress {
  std::string ip;  // as text
  uint32_t prefix_len = 0;
  bool ipv6 = false;
};

// The addresses of `ifname` (IPv4 and IPv6); NOT_FOUND when the netdev
// does not exist.
absl::StatusOr<std::vector<IpAddress>> ListAddresses(const std::string& ifname);

// The kernel's route to `ip` (RTM_GETROUTE, as `ip route get`): the netdev
// traffic to it leaves on and, when routed, the gateway whose neighbour
// entry the traffic needs. INVALID_ARGUMENT for a malformed address; the
// kernel's refusal (no route: unreachable) as an error status.
struct RouteHop {
  std::string netdev;
  std::string gateway;  // empty: on-link
};
absl::StatusOr<RouteHop> RouteTo(const std::string& ip);

}  // namespace roced::hal

// The diagnose check `neighbours`: every RoCE peer's next hop needs a resolved
// neighbour entry.
#include "diagnose/check.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "util/ip_subnet.h"

namespace roced::diagnose {

namespace {

// The RoCE netdev with `ip` in one of its subnets ("" when none: routed).
std::string OnLinkNetdev(const Inputs& in, const std::string& ip) {
  for (const auto& [netdev, addrs] : in.addresses) {
    for (const auto& a : addrs) {
      auto net = util::SubnetOf(a.ip, a.prefix_len);
      if (net && net->Contains(ip) && a.ip != ip) return netdev;
    }
  }
  return "";
}

// The netdev and the neighbour RoCE traffic to `ip` needs: the kernel's
// route when it was read (the gateway when routed), else the RoCE netdev
// whose subnet holds `ip`; netdev "" when neither knows.
std::pair<std::string, std::string> NextHop(const Inputs& in, const std::string& ip) {
  if (auto r = in.routes.find(ip); r != in.routes.end()) {
    return {r->second.netdev, r->second.gateway.empty() ? ip : r->second.gateway};
  }
  return {OnLinkNetdev(in, ip), ip};
}

void Neighbours(const Ctx& c) {
  for (const auto& [ip, peer] : PeerAddresses(c.in)) {
    const auto [netdev, hop] = NextHop(c.in, ip);
    auto table = c.in.neighbours.find(netdev);
    if (netdev.empty() || table == c.in.neighbours.end()) continue;  // not a RoCE netdev, or not read
    // A lambda may not capture a structured binding before C++20's clang 16.
    const auto& next = hop;
    auto entry = std::find_if(table->second.begin(), table->second.end(),
                              [&next](const hal::Neighbour& n) { return n.ip == next; });
    if (entry != table->second.end() && hal::NeighbourResolved(entry->state)) continue;
    const bool absent = entry == table->second.end();
    const std::string what = hop == ip ? hop : absl::StrCat(hop, " (the gateway to ", ip, ")");
    c.Add(absent ? roced::v1::SEVERITY_INFO : roced::v1::SEVERITY_WARNING, absl::StrCat(peer, " (", ip, ")"),
          absent ? absl::StrCat("no neighbour entry for ", what, " on ", netdev)
                 : absl::StrCat("the neighbour entry for ", what, " on ", netdev, " is ",
                                hal::NeighbourStateName(entry->state)),
          absl::StrCat(absent ? "never resolved, or expired; "
                              : "ARP/ND asked and got no answer; ",
                       "RoCE v2 connection set-up resolves the next hop's MAC through this table, and an "
                       "unresolved one fails with errors that point at GIDs or timeouts instead"),
          absl::StrCat("`ping -I ", netdev, " ", hop, "` and `ip neigh show dev ", netdev,
                       "`; no answer: check the address, VLAN and the switch port, and the peer's "
                       "arp_ignore/rp_filter (see arp_flux there)"));
  }
}

const char* NoNeighbourTable(const Inputs& in) {
  if (in.neighbours.empty()) return "no RoCE netdev's neighbour table was read (not the running kernel's netdevs?)";
  return PeerAddresses(in).empty() ? "no probe peer has an address" : nullptr;
}

}  // namespace

const Check kNeighboursCheck = {{"neighbours", "probe peers' addresses without a resolved neighbour entry",
                        "addresses, neighbour tables and routes to the probe peers",
                        "every RoCE peer's next hop needs a resolved neighbour entry"},
                       Neighbours, NoNeighbourTable};

}  // namespace roced::diagnose

// The diagnose check `arp_flux`: netdevs in one subnet need arp_ignore=1,
// arp_announce=2 and rp_filter off or loose, or ARP answers come from the
// wrong port.
#include "diagnose/check.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/ip_subnet.h"

namespace roced::diagnose {

namespace {

// The RoCE netdevs of each IPv4 subnet (ARP is IPv4's).
std::map<util::IpSubnet, std::set<std::string>> NetdevsBySubnet(const Inputs& in) {
  std::map<util::IpSubnet, std::set<std::string>> out;
  for (const auto& [netdev, obs] : RoceNetdevs(in)) {
    auto it = in.addresses.find(netdev);
    if (it == in.addresses.end()) continue;
    for (const auto& a : it->second) {
      if (a.ipv6) continue;
      if (auto net = util::SubnetOf(a.ip, a.prefix_len)) out[*net].insert(netdev);
    }
  }
  return out;
}

std::string Sysctl(const std::optional<int>& v) { return v ? absl::StrCat(*v) : "?"; }

// What `netdev` needs set ("" when nothing): arp_ignore 1 (reply only for
// addresses on the receiving port), arp_announce 2 (ARP requests carry the
// outgoing port's own address), rp_filter not strict (a reply arriving on
// the sibling port is dropped by strict reverse-path filtering).
std::string ArpFixes(const std::string& netdev, const hal::ArpSysctls& eff, bool* strict) {
  std::vector<std::string> set;
  if (eff.arp_ignore && *eff.arp_ignore != 1 && *eff.arp_ignore != 2) set.push_back("arp_ignore=1");
  if (eff.arp_announce && *eff.arp_announce != 2) set.push_back("arp_announce=2");
  if (eff.rp_filter && *eff.rp_filter == 1) {
    set.push_back("rp_filter=2");
    *strict = true;
  }
  for (auto& s : set) s = absl::StrCat("net.ipv4.conf.", netdev, ".", s);
  return absl::StrJoin(set, " ");
}

void ArpFlux(const Ctx& c) {
  const hal::ArpSysctls& all = c.in.arp_sysctls_all;
  for (const auto& [subnet, netdevs] : NetdevsBySubnet(c.in)) {
    if (netdevs.size() < 2) continue;
    std::vector<std::string> values;
    std::vector<std::string> fixes;
    bool strict = false;
    for (const std::string& netdev : netdevs) {
      auto it = c.in.arp_sysctls.find(netdev);
      if (it == c.in.arp_sysctls.end()) continue;
      const hal::ArpSysctls& own = it->second;
      const hal::ArpSysctls eff = hal::EffectiveArpSysctls(own, all);
      std::string fix = ArpFixes(netdev, eff, &strict);
      if (fix.empty()) continue;
      fixes.push_back(std::move(fix));
      values.push_back(absl::StrCat(netdev, ": arp_ignore ", Sysctl(own.arp_ignore), ", arp_announce ",
                                    Sysctl(own.arp_announce), ", rp_filter ", Sysctl(own.rp_filter)));
    }
    if (fixes.empty()) continue;
    c.Add(strict ? roced::v1::SEVERITY_ERROR : roced::v1::SEVERITY_WARNING,
          absl::StrCat(absl::StrJoin(netdevs, ", "), " (", subnet.ToString(), ")"),
          absl::StrCat(absl::StrJoin(netdevs, " and "), " share subnet ", subnet.ToString(),
                       " without the sysctls that keep ARP and replies on the right port"),
          absl::StrCat(absl::StrJoin(values, "; "), " (conf/all: ", Sysctl(all.arp_ignore), ", ",
                       Sysctl(all.arp_announce), ", ", Sysctl(all.rp_filter),
                       "; the kernel takes the larger); either port answers ARP for both addresses, so peers "
                       "send one port's RoCE traffic to the other's MAC",
                       strict ? ", and strict rp_filter drops what arrives on the other port" : ""),
          absl::StrCat("`sysctl -w ", absl::StrJoin(fixes, " "),
                       "` (persist in /etc/sysctl.d), and a routing table per port (`ip rule add from <port's "
                       "IP> table <n>`), or put the ports in different subnets"));
  }
}

const char* NoArpSysctls(const Inputs& in) {
  return in.arp_sysctls.empty() ? "no RoCE netdev's ARP sysctls could be read" : nullptr;
}

}  // namespace

const Check kArpFluxCheck = {{"arp_flux", "RoCE netdevs in one subnet without ARP/rp_filter sysctls",
                        "ARP and rp_filter sysctls of RoCE netdevs sharing a subnet",
                        "netdevs in one subnet need arp_ignore=1, arp_announce=2 and rp_filter off or loose, or ARP answers come from the wrong port"},
                       ArpFlux, NoArpSysctls};

}  // namespace roced::diagnose

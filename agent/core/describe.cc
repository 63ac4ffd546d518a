#include "agent/core/describe.h"

#include <algorithm>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "probe/params.h"

namespace roced::agent {
namespace {

// The port's RoCE v2 GID for an IPv4 address with the lowest index; null
// when it has none.
const roced::v1::Gid* RoceV2Ipv4Gid(const roced::v1::Port& port) {
  const roced::v1::Gid* best = nullptr;
  for (const roced::v1::Gid& g : port.gids()) {
    if (!probe::IsRoceV2Ipv4Gid(g)) continue;
    if (best == nullptr || g.index() < best->index()) best = &g;
  }
  return best;
}

}  // namespace

roced::v1::DescribeResponse DescribeNode(const roced::v1::NodeState& state,
                                         const std::vector<roced::v1::LldpNeighbor>& neighbors) {
  roced::v1::DescribeResponse out;
  out.set_node_name(state.hostname());
  out.set_version(state.agent().version());
  std::set<std::string> roce_netdevs;
  std::vector<const roced::v1::RdmaDevice*> devices;
  for (const roced::v1::RdmaDevice& d : state.devices()) devices.push_back(&d);
  std::sort(devices.begin(), devices.end(), [](auto* a, auto* b) { return a->name() < b->name(); });
  for (const roced::v1::RdmaDevice* d : devices) {
    std::vector<const roced::v1::Port*> ports;
    for (const roced::v1::Port& p : d->ports()) ports.push_back(&p);
    std::sort(ports.begin(), ports.end(), [](auto* a, auto* b) { return a->number() < b->number(); });
    for (const roced::v1::Port* p : ports) {
      if (p->link_layer() != "Ethernet") continue;
      if (!p->netdev().empty()) roce_netdevs.insert(p->netdev());
      const roced::v1::Gid* gid = RoceV2Ipv4Gid(*p);
      if (gid == nullptr) continue;
      roced::v1::MeshEndpoint* e = out.add_endpoints();
      e->set_device(d->name());
      e->set_port(p->number());
      e->set_netdev(p->netdev());
      e->set_gid(gid->gid());
      e->set_gid_index(gid->index());
      e->set_ip_address(gid->ip_address());
      e->set_active_mtu(p->active_mtu());
    }
  }
  const roced::v1::MeshConfig& mesh = state.config().desired().mesh();
  out.set_pod(mesh.pod());
  if (!mesh.tor().empty()) {
    out.set_tor(mesh.tor());
    out.set_tor_source("config");
    return out;
  }
  // Else what the switch on the first RoCE netdev (by name) calls itself.
  const roced::v1::LldpNeighbor* tor = nullptr;
  for (const roced::v1::LldpNeighbor& n : neighbors) {
    if (!roce_netdevs.contains(n.netdev())) continue;
    if (n.system_name().empty() && n.chassis_id().empty()) continue;
    if (tor == nullptr || n.netdev() < tor->netdev()) tor = &n;
  }
  if (tor != nullptr) {
    out.set_tor(tor->system_name().empty() ? tor->chassis_id() : tor->system_name());
    out.set_tor_source(absl::StrCat("lldp:", tor->netdev()));
  }
  return out;
}

}  // namespace roced::agent

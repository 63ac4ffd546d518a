#include <sys/resource.h>

#include <set>

#include "diagnose/checks.h"

namespace roced::diagnose {

Inputs Gather(roced::v1::NodeState state, reconcile::NodeIo* node, const hal::HugepagePools& hugepages) {
  Inputs in;
  in.state = std::move(state);
  if (node != nullptr) {
    for (const auto& dev : in.state.devices()) {
      for (const auto& port : dev.ports()) {
        if (port.link_layer() != "Ethernet" || port.netdev().empty() || in.netdevs.count(port.netdev())) continue;
        in.netdevs[port.netdev()] = node->ObserveInterface({0, port.netdev(), dev.name(), port.number()});
      }
    }
  }
  in.hugepages = hugepages.NodeWide();
  rlimit lim{};
  if (getrlimit(RLIMIT_MEMLOCK, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) in.memlock_bytes = lim.rlim_cur;
  return in;
}

}  // namespace roced::diagnose

namespace roced::diagnose {

namespace {

// Each RoCE netdev once.
std::set<std::string> RoceNetdevNames(const roced::v1::NodeState& state) {
  std::set<std::string> names;
  for (const auto& dev : state.devices()) {
    for (const auto& port : dev.ports()) {
      if (port.link_layer() == "Ethernet" && !port.netdev().empty()) names.insert(port.netdev());
    }
  }
  return names;
}

void GatherNetdevs(const hal::Paths& paths, bool live_netdevs, Inputs* in) {
  for (const std::string& netdev : RoceNetdevNames(in->state)) {
    in->arp_sysctls[netdev] = hal::ReadArpSysctls(paths, netdev);
    if (!live_netdevs) continue;
    if (auto a = hal::ListAddresses(netdev); a.ok()) in->addresses[netdev] = *std::move(a);
    if (auto n = hal::ListNeighbours(netdev); n.ok()) in->neighbours[netdev] = *std::move(n);
  }
  in->arp_sysctls_all = hal::ReadArpSysctls(paths, "all");
}

}  // namespace

void GatherHost(const hal::Paths& paths, bool live_netdevs, Inputs* in) {
  in->live_netdevs = live_netdevs;
  in->numa_cpus = hal::NumaNodeCpus(paths);
  in->allowed_cpus = hal::AllowedCpus();
  in->numa_hugepages = hal::HugepagePools(paths).PerNumaNode();
  for (const auto& dev : in->state.devices()) in->device_irqs[dev.name()] = hal::DeviceIrqAffinity(paths, dev.name());
  GatherNetdevs(paths, live_netdevs, in);
  if (auto clock = hal::ReadKernelClock(); clock.ok()) in->clock = *clock;
  in->ptp_clocks = hal::ListPtpClocks(paths);
  in->probe_buffer_binds = probe::BufferBindFailuresSoFar();
}

void GatherRoutes(Inputs* in) {
  if (!in->live_netdevs) return;
  for (const auto& [ip, peer] : PeerAddresses(*in)) {
    if (auto hop = hal::RouteTo(ip); hop.ok()) in->routes[ip] = *std::move(hop);
  }
}

}  // namespace roced::diagnose

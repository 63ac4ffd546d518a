#include <sys/resource.h>

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

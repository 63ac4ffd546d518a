// The diagnose check `mtu`: RoCE MTU 4096 needs a netdev MTU of at least 4096
// plus headers.
#include "diagnose/check.h"

#include "absl/strings/str_cat.h"

namespace roced::diagnose {

namespace {

void Mtu(const Ctx& c) {
  ForEachRocePort(c.in, [&](const roced::v1::RdmaDevice& dev, const roced::v1::Port& port) {
    if (port.active_mtu() == 0 || port.active_mtu() >= 4096) return;
    uint32_t netdev_mtu = port.netdev_mtu();
    if (auto it = c.in.netdevs.find(port.netdev()); it != c.in.netdevs.end() && it->second.mtu) {
      netdev_mtu = *it->second.mtu;
    }
    c.Add(roced::v1::SEVERITY_INFO, PortName(dev, port),
          absl::StrCat("RoCE MTU is ", port.active_mtu(), " (netdev MTU ", netdev_mtu, ")"),
          "the RoCE MTU is the largest IB MTU that fits the netdev MTU less the RoCE headers; large "
          "messages take 4x the packets of a 4096 MTU, and both ends use the smaller of their MTUs",
          "set `mtu: 4200` (or 9000) on both ends and the switch ports, for a RoCE MTU of 4096");
  });
}

}  // namespace

const Check kMtuCheck = {{"mtu", "RoCE MTU below 4096 because of the netdev MTU",
                        "each RoCE port's active MTU and its netdev's MTU (state, netdevs)",
                        "RoCE MTU 4096 needs a netdev MTU of at least 4096 plus headers"},
                       Mtu, NoObservedNetdev};

}  // namespace roced::diagnose

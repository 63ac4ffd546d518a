// The diagnose check `roce_v2_gid`: RoCE v2 needs a GID of type RoCE v2
// carrying the port's IP address; without one, traffic runs as v1 or not at
// all.
#include "diagnose/check.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace roced::diagnose {

namespace {

void RoceV2Gid(const Ctx& c) {
  ForEachRocePort(c.in, [&](const roced::v1::RdmaDevice& dev, const roced::v1::Port& port) {
    if (port.state() != roced::v1::PORT_STATE_ACTIVE) return;  // port_state says it
    bool v2_ip = false;
    for (const auto& g : port.gids()) {
      if (g.type() != roced::v1::GID_TYPE_ROCE_V2 || g.ip_address().empty()) continue;
      if (absl::StartsWithIgnoreCase(g.ip_address(), "fe80:")) continue;  // link-local only
      v2_ip = true;
    }
    if (v2_ip) return;
    c.Add(roced::v1::SEVERITY_ERROR, PortName(dev, port),
          "no RoCE v2 GID with a routable IP address",
          absl::StrCat(port.gids_size(), " GID(s) in the table; RoCE v2 GIDs follow the netdev's IP addresses, "
                       "so without one traffic can only use RoCE v1 or link-local GIDs, which do not cross "
                       "an IP router"),
          "assign the node's data IP to " + (port.netdev().empty() ? std::string("the netdev") : port.netdev()) +
              " and select the GID by address (`show_gids`, `rdma link`), not by a fixed index");
  });
}

}  // namespace

const Check kRoceV2GidCheck = {{"roce_v2_gid", "RoCE ports without a RoCE v2 GID carrying a routable IP",
                        "each RoCE port's GID table (state)",
                        "RoCE v2 needs a GID of type RoCE v2 carrying the port's IP address; without one, traffic runs as v1 or not at all"},
                       RoceV2Gid, NoRocePort};

}  // namespace roced::diagnose

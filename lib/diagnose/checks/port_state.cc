// The diagnose check `port_state`: a RoCE port must be ACTIVE: a DOWN or INIT
// port carries no RoCE traffic.
#include "diagnose/check.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace roced::diagnose {

namespace {

void PortState(const Ctx& c) {
  ForEachRocePort(c.in, [&](const roced::v1::RdmaDevice& dev, const roced::v1::Port& port) {
    if (port.state() == roced::v1::PORT_STATE_ACTIVE) return;
    std::string state = roced::v1::PortState_Name(port.state());
    absl::StrReplaceAll({{"PORT_STATE_", ""}}, &state);
    c.Add(roced::v1::SEVERITY_ERROR, PortName(dev, port), absl::StrCat("port is ", state, ", not ACTIVE"),
          absl::StrCat("physical state ", port.phys_state().empty() ? "unknown" : port.phys_state(),
                       port.netdev().empty() ? "" : absl::StrCat("; netdev ", port.netdev(), " operstate ",
                                                                  port.netdev_operstate())),
          "check the link: cable and switch port (`ethtool " + port.netdev() + "`, `ip link show " +
              port.netdev() + "`), and that the netdev is up");
  });
}

}  // namespace

const Check kPortStateCheck = {{"port_state", "RoCE ports that are not ACTIVE",
                        "the discovered RDMA ports (state)",
                        "a RoCE port must be ACTIVE: a DOWN or INIT port carries no RoCE traffic"},
                       PortState, NoRocePort};

}  // namespace roced::diagnose

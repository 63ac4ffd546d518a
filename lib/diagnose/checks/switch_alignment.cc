// The diagnose check `switch_alignment`: host and switch must agree: the same
// DSCP-to-priority map and lossless priorities, a switch frame size not below
// the host MTU.
#include "diagnose/check.h"

#include "hal/dcb_netlink.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace roced::diagnose {

namespace {

// The priority RoCE's DSCP lands on at the host: the app table's entry,
// else the NIC's default table (DSCP/8 on mlx5).
uint8_t HostPriority(const reconcile::InterfaceObserved& obs, uint8_t dscp) {
  if (obs.dscp) {
    if (auto it = obs.dscp->find(dscp); it != obs.dscp->end()) return it->second;
  }
  return static_cast<uint8_t>(dscp >> 3);
}

// The switch's priority for `dscp` in its LLDP application table.
std::optional<uint32_t> SwitchPriority(const roced::v1::LldpNeighbor& n, uint8_t dscp) {
  for (const auto& app : n.apps()) {
    if (app.selector() == hal::kAppSelectorDscp && app.protocol() == dscp) return app.priority();
  }
  return std::nullopt;
}

const roced::v1::LldpNeighbor* NeighborOf(const Inputs& in, const std::string& netdev) {
  for (const auto& n : in.state.lldp_neighbors()) {
    if (n.netdev() == netdev) return &n;
  }
  return nullptr;
}

// Whether the agent listens for LLDP at all (its "lldp" component), and
// the reason it cannot on `netdev` ("" when it can).
std::optional<std::string> LldpListening(const Inputs& in, const std::string& netdev) {
  for (const auto& comp : in.state.agent().components()) {
    if (comp.name() != "lldp") continue;
    const std::string prefix = netdev + ": ";
    const size_t at = comp.message().find(prefix);
    if (comp.healthy() || at == std::string::npos) return std::string();
    const size_t end = comp.message().find(';', at);
    return comp.message().substr(at + prefix.size(), end == std::string::npos ? end : end - at - prefix.size());
  }
  return std::nullopt;
}

std::string SwitchName(const roced::v1::LldpNeighbor& n) {
  if (n.chassis_id_subtype() == "driver") return "switch (as the NIC's driver reports it)";
  return absl::StrCat("switch ", n.system_name().empty() ? n.chassis_id() : n.system_name(), " port ", n.port_id());
}

// RoCE's DSCP, priority and lossless class on both sides of the link.
void AlignPriorities(const Ctx& c, const std::string& netdev, const reconcile::InterfaceObserved& obs,
                     const roced::v1::LldpNeighbor& n) {
  const std::string sw = SwitchName(n);
  const std::optional<uint32_t> tos = RoceTos(c.in, netdev, obs);
  if (tos) {
    const uint8_t dscp = static_cast<uint8_t>(*tos >> 2);
    const uint8_t host_prio = HostPriority(obs, dscp);
    const std::optional<uint32_t> sw_prio = SwitchPriority(n, dscp);
    if (sw_prio && *sw_prio != host_prio) {
      c.Add(roced::v1::SEVERITY_ERROR, netdev,
            absl::StrFormat("RoCE's DSCP %d is priority %d on the host but priority %d on the %s", dscp, host_prio,
                            *sw_prio, sw),
            "the switch's LLDP application table classifies RoCE to another queue than the host: pauses and "
            "ECN marks of one side act on the other side's wrong class",
            absl::StrFormat("map DSCP %d to the same priority on both: `dscp_to_priority: {%d: %d}` here, or "
                            "the switch's DSCP-to-priority map",
                            dscp, dscp, *sw_prio));
    }
    if (obs.pfc && n.has_pfc()) {
      const bool host_lossless = obs.pfc->enabled & (1u << host_prio);
      const bool sw_lossless = n.pfc().enabled() & (1u << host_prio);
      if (host_lossless != sw_lossless) {
        c.Add(roced::v1::SEVERITY_ERROR, netdev,
              absl::StrFormat("RoCE (DSCP %d, priority %d) is lossless on the %s but not on the %s", dscp,
                              host_prio, host_lossless ? "host" : sw, host_lossless ? sw : "host"),
              absl::StrCat("host PFC ", Prios(obs.pfc->enabled), ", switch PFC ",
                           Prios(static_cast<uint8_t>(n.pfc().enabled())),
                           "; pauses one side sends are ignored by the other, so RoCE drops under congestion"),
              absl::StrFormat("enable PFC on priority %d on both ends (`qos.pfc.priorities: [%d]` and the switch "
                              "port's PFC)",
                              host_prio, host_prio));
      }
    }
  }
  if (obs.pfc && n.has_pfc() && obs.pfc->enabled != n.pfc().enabled()) {
    c.Add(roced::v1::SEVERITY_WARNING, netdev,
          absl::StrCat("PFC priorities differ: host ", Prios(obs.pfc->enabled), ", ", sw, " ",
                       Prios(static_cast<uint8_t>(n.pfc().enabled()))),
          "a priority lossless on one side only is dropped under congestion (or pauses nobody honours)",
          "enable PFC on the same priorities on the host and the switch port");
  }
}

void AlignLink(const Ctx& c, const std::string& netdev, const reconcile::InterfaceObserved* obs,
               const roced::v1::LldpNeighbor& n) {
  // The host MTU is the IP payload; the switch's figure is the whole frame:
  // 14 bytes of Ethernet header and 4 of FCS more (a VLAN tag adds 4).
  constexpr uint32_t kFrameOverhead = 18;
  const uint32_t mtu = obs != nullptr && obs->mtu ? *obs->mtu : 0;
  if (mtu > 0 && n.has_max_frame_size() && n.max_frame_size() < mtu + kFrameOverhead) {
    c.Add(roced::v1::SEVERITY_ERROR, netdev,
          absl::StrCat("the ", SwitchName(n), " takes frames of at most ", n.max_frame_size(),
                       " bytes; the host MTU ", mtu, " needs ", mtu + kFrameOverhead),
          "full-size packets from this host are dropped at the switch (RoCE retransmits them forever: "
          "transfers stall once messages exceed the switch's MTU)",
          absl::StrCat("raise the switch port's MTU to at least ", mtu + kFrameOverhead,
                       " bytes, or lower the host's (`mtu:` in the config)"));
  }
  const bool static_qos = std::any_of(
      c.in.state.config().desired().interfaces().begin(), c.in.state.config().desired().interfaces().end(),
      [&](const auto& iface) { return iface.match().netdev() == netdev && iface.has_qos(); });
  if (obs != nullptr && obs->dcb_willing.value_or(false) && static_qos) {
    c.Add(roced::v1::SEVERITY_WARNING, netdev, "the port is willing: it takes DCB settings the switch advertises",
          absl::StrCat("the config sets QoS statically, but with the willing bit a DCBX agent (firmware or "
                       "lldpad) may replace it with the ", SwitchName(n), "'s"),
          "clear the willing bit (`dcb ets set dev " + netdev + " willing off`, or the NIC's DCBX mode) and "
          "keep both sides static");
  }
}

void SwitchAlignment(const Ctx& c) {
  for (const auto& [netdev, obs] : RoceNetdevs(c.in)) {
    const std::optional<std::string> listening = LldpListening(c.in, netdev);
    if (!listening) return;  // no LLDP listener (e.g. a fixture tree)
    const roced::v1::LldpNeighbor* n = NeighborOf(c.in, netdev);
    if (n == nullptr) {
      c.Add(roced::v1::SEVERITY_INFO, netdev,
            listening->empty() ? "no LLDP heard from the switch" : "not listening for LLDP",
            listening->empty() ? "no LLDPDU arrived within the last TTL, so the switch's PFC, DSCP map and MTU "
                                 "cannot be compared with the host's"
                               : *listening,
            "enable LLDP with the DCBX TLVs (IEEE 802.1Qaz) on the switch port; where the NIC's firmware "
            "runs LLDP itself (mlx5 `lldp` firmware agent) the host does not see the frames");
      continue;
    }
    if (obs != nullptr) AlignPriorities(c, netdev, *obs, *n);
    AlignLink(c, netdev, obs, *n);
  }
}

}  // namespace

const Check kSwitchAlignmentCheck = {{"switch_alignment", "the host's PFC, DSCP map, MTU and willing bit against the switch's LLDP",
                        "the host's DCB state and the switch's LLDP (netdevs, state)",
                        "host and switch must agree: the same DSCP-to-priority map and lossless priorities, a switch frame size not below the host MTU"},
                       SwitchAlignment, NoObservedNetdev};

}  // namespace roced::diagnose

#include "diagnose/checks.h"

#include <sys/timex.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/ascii.h"
#include "hal/dcb_netlink.h"
#include "hal/driver_profile.h"
#include "model/defaults.h"
#include "probe/baseline.h"
#include "util/ip_subnet.h"

namespace roced::diagnose {

namespace {

using roced::v1::Finding;
using roced::v1::Severity;

struct Ctx {
  const Inputs& in;
  std::vector<Finding>* out;
  const char* check;
  void Add(Severity sev, const std::string& object, const std::string& summary, const std::string& detail,
           const std::string& remedy) const {
    Finding f;
    f.set_check(check);
    f.set_severity(sev);
    f.set_object(object);
    f.set_summary(summary);
    f.set_detail(detail);
    f.set_remedy(remedy);
    out->push_back(std::move(f));
  }
};

// Every RoCE port (Ethernet link layer) with its device.
void ForEachRocePort(const Inputs& in,
                     const std::function<void(const roced::v1::RdmaDevice&, const roced::v1::Port&)>& fn) {
  for (const auto& dev : in.state.devices()) {
    for (const auto& port : dev.ports()) {
      if (port.link_layer() == "Ethernet") fn(dev, port);
    }
  }
}

std::string PortName(const roced::v1::RdmaDevice& dev, const roced::v1::Port& port) {
  return absl::StrCat(dev.name(), "/", port.number(),
                      port.netdev().empty() ? "" : absl::StrCat(" (", port.netdev(), ")"));
}

std::string Prios(uint8_t mask) {
  std::vector<int> p;
  for (int i = 0; i < 8; ++i) {
    if (mask & (1u << i)) p.push_back(i);
  }
  return absl::StrCat("[", absl::StrJoin(p, ","), "]");
}

// The RoCE netdevs (each once), with their observation when there is one.
std::vector<std::pair<std::string, const reconcile::InterfaceObserved*>> RoceNetdevs(const Inputs& in) {
  std::vector<std::pair<std::string, const reconcile::InterfaceObserved*>> out;
  std::set<std::string> seen;
  ForEachRocePort(in, [&](const roced::v1::RdmaDevice&, const roced::v1::Port& port) {
    if (port.netdev().empty() || !seen.insert(port.netdev()).second) return;
    auto it = in.netdevs.find(port.netdev());
    out.emplace_back(port.netdev(), it == in.netdevs.end() ? nullptr : &it->second);
  });
  return out;
}

// The ToS RoCE traffic leaves `netdev` with: rdma_cm's default when set,
// else the config's roce.default_tos for the interface.
std::optional<uint32_t> RoceTos(const Inputs& in, const std::string& netdev, const reconcile::InterfaceObserved& obs) {
  if (obs.roce_tos && *obs.roce_tos != 0) return *obs.roce_tos;
  for (const auto& iface : in.state.config().desired().interfaces()) {
    if (iface.match().netdev() == netdev && iface.roce().has_default_tos()) return iface.roce().default_tos();
  }
  return std::nullopt;
}

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

void RoceMode(const Ctx& c) {
  for (const auto& [netdev, obs] : RoceNetdevs(c.in)) {
    if (obs == nullptr || !obs->roce_mode || *obs->roce_mode != roced::v1::ROCE_MODE_V1) continue;
    c.Add(roced::v1::SEVERITY_WARNING, netdev, "rdma_cm's default RoCE mode is v1",
          "connections made through rdma_cm (NCCL, UCX, NVMe-oF, librdmacm tools) use RoCE v1 GIDs: "
          "layer 2 only, not routable, no ECN in an IP header",
          "set `roce: {default_mode: v2}` for the interface (or `cma_roce_mode -m 2`)");
  }
}

void PfcDscp(const Ctx& c) {
  for (const auto& [netdev, obs] : RoceNetdevs(c.in)) {
    if (obs == nullptr) continue;
    if (!obs->pfc) {
      c.Add(roced::v1::SEVERITY_INFO, netdev, "no DCB support: PFC, ETS and trust cannot be read",
            "the driver answers DCB netlink with EOPNOTSUPP (a NIC without DCB, or a software device)",
            "for lossless RoCE use a NIC whose driver implements DCB (mlx5, bnxt_re, irdma ...)");
      continue;
    }
    const uint8_t lossless = obs->pfc->enabled;
    if (lossless == 0) {
      c.Add(roced::v1::SEVERITY_INFO, netdev, "PFC is off on every priority",
            "RoCE runs lossy: drops are recovered by go-back-N retransmission, congestion only by ECN/DCQCN",
            "for lossless RoCE enable PFC on the RoCE priority (`qos.pfc.priorities: [3]`), on the switch too");
      continue;
    }
    const bool trust_dscp = obs->dscp && !obs->dscp->empty();
    if (!trust_dscp) {
      c.Add(roced::v1::SEVERITY_WARNING, netdev,
            absl::StrCat("PFC is on ", Prios(lossless), " but the port trusts PCP"),
            absl::StrCat("with PCP trust only VLAN-tagged frames carrying PCP ", Prios(lossless),
                         " are lossless; untagged RoCE traffic is classified to priority 0"),
            absl::StrCat("trust DSCP and map the RoCE DSCP to the PFC priority (`qos: {trust: dscp, "
                         "dscp_to_priority: {26: ", __builtin_ctz(lossless), "}}`)"));
      continue;
    }
    const reconcile::DscpMap& map = *obs->dscp;
    if (std::optional<uint32_t> tos = RoceTos(c.in, netdev, *obs)) {
      const uint8_t dscp = static_cast<uint8_t>(*tos >> 2);
      auto it = map.find(dscp);
      // Unmapped DSCPs keep the NIC's default table (priority DSCP/8 on mlx5).
      const uint8_t prio = it != map.end() ? it->second : static_cast<uint8_t>(dscp >> 3);
      if ((lossless & (1u << prio)) == 0) {
        c.Add(roced::v1::SEVERITY_ERROR, netdev,
              absl::StrFormat("RoCE traffic (ToS %d = DSCP %d) is classified to priority %d, but PFC is on %s",
                              *tos, dscp, prio, Prios(lossless)),
              absl::StrCat(it != map.end() ? "the DSCP app table maps it there"
                                           : "no app-table entry for it, so the NIC's default applies",
                           "; RoCE is lossy on this port while the PFC priority carries no RoCE"),
              absl::StrFormat("map DSCP %d to priority %d (`dscp_to_priority: {%d: %d}`), or move PFC to "
                              "priority %d, the same on every node and switch",
                              dscp, __builtin_ctz(lossless), dscp, __builtin_ctz(lossless), prio));
      }
    }
    for (int p = 0; p < 8; ++p) {
      if ((lossless & (1u << p)) == 0) continue;
      bool mapped = std::any_of(map.begin(), map.end(), [p](const auto& e) { return e.second == p; });
      if (mapped) continue;
      c.Add(roced::v1::SEVERITY_WARNING, netdev,
            absl::StrCat("PFC is on priority ", p, " but no DSCP maps to it"),
            "with DSCP trust nothing is classified to this priority, so the lossless class is empty",
            absl::StrCat("add the RoCE DSCP to the map (`dscp_to_priority: {26: ", p, "}`)"));
    }
  }
}

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

// dcbx_mode: the port's DCB owned by an agent in the NIC (getdcbx without
// the host bit: mlx5's firmware DCBX, bnxt_en's and ice's firmware LLDP
// agents), where what the host writes is replaced by what the switch
// advertises, or refused. The remedy is the driver's (hal/driver_profile).
void DcbxMode(const Ctx& c) {
  for (const auto& [netdev, obs] : RoceNetdevs(c.in)) {
    if (obs == nullptr || obs->dcbx_host != false) continue;
    const hal::DriverProfile& profile = hal::ProfileFor(obs->driver);
    bool manages_dcb = false;
    bool takes_host = false;
    for (const auto& iface : c.in.state.config().desired().interfaces()) {
      if (iface.match().netdev() != netdev || !iface.has_qos()) continue;
      const auto& q = iface.qos();
      manages_dcb = manages_dcb || q.trust() != roced::v1::TRUST_UNSPECIFIED || q.dscp_to_priority_size() > 0 ||
                    q.has_pfc() || q.has_ets() || q.has_buffers();
      takes_host = takes_host || q.dcbx_mode() == roced::v1::DCBX_MODE_HOST;
    }
    // The reconciler takes host mode where setdcbx can (`converged` says
    // whether it has); elsewhere only the operator can.
    if (takes_host && profile.host_mode_by_setdcbx) continue;
    c.Add(manages_dcb ? roced::v1::SEVERITY_WARNING : roced::v1::SEVERITY_INFO, netdev,
          absl::StrCat("DCB is owned by ", profile.firmware_agent, ", not the host"),
          manages_dcb ? "the config sets PFC, ETS, trust or buffers on this port, but the NIC replaces or refuses "
                        "host writes (it follows what the switch advertises), so roced reports those fields "
                        "instead of writing them"
                      : "PFC, ETS and the DSCP map follow what the switch advertises over LLDP; host tools' "
                        "changes do not last",
          manages_dcb || !profile.host_mode_by_setdcbx
              ? hal::HostModeFix(profile, netdev)
              : "keep the switch's DCBX policy the source of truth, or take host mode (`qos.dcbx_mode: host`, "
                "`dcb dcbx set dev " + netdev + " host ieee`) and set QoS statically");
  }
}

void Ecn(const Ctx& c) {
  for (const auto& [netdev, obs] : RoceNetdevs(c.in)) {
    if (obs == nullptr || !obs->pfc || obs->pfc->enabled == 0) continue;
    const uint8_t lossless = obs->pfc->enabled;
    struct Role {
      const std::optional<uint8_t>& mask;
      const char* name;
      const char* effect;
    };
    for (const Role& r : {Role{obs->ecn_np, "notification point",
                               "the NIC sends no CNPs for ECN-marked packets it receives"},
                          Role{obs->ecn_rp, "reaction point", "the NIC does not slow down when CNPs arrive"}}) {
      if (!r.mask) continue;
      const uint8_t off = lossless & static_cast<uint8_t>(~*r.mask);
      if (off == 0) continue;
      c.Add(roced::v1::SEVERITY_WARNING, netdev,
            absl::StrCat("ECN ", r.name, " is off on PFC priority ", Prios(off)),
            absl::StrCat(r.effect, ", so congestion is left to PFC pauses, which spread it (head-of-line "
                                   "blocking, pause storms)"),
            absl::StrCat("`qos.ecn: {np_priorities: ", Prios(lossless), ", rp_priorities: ", Prios(lossless),
                         "}`"));
    }
  }
}

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

double LaneGbps(double gts) {
  return gts * (gts >= 8.0 ? 128.0 / 130.0 : 0.8);  // 128b/130b from 8 GT/s, 8b/10b below
}

void Pcie(const Ctx& c) {
  for (const auto& dev : c.in.state.devices()) {
    const auto& l = dev.pcie();
    if (!l.degraded()) continue;
    c.Add(roced::v1::SEVERITY_WARNING, absl::StrCat(dev.name(), " (", dev.pci_address(), ")"),
          absl::StrFormat("PCIe link runs x%d %g GT/s; the device supports x%d %g GT/s", l.current_width(),
                          l.current_speed_gts(), l.max_width(), l.max_speed_gts()),
          absl::StrFormat("at most ~%.0f Gb/s over PCIe instead of ~%.0f Gb/s: bandwidth probes and "
                          "applications top out there",
                          l.current_width() * LaneGbps(l.current_speed_gts()),
                          l.max_width() * LaneGbps(l.max_speed_gts())),
          "move the card to a slot with the full width, check BIOS bifurcation and riser, and reseat; "
          "`lspci -vv` LnkSta shows the trained link");
  }
}

std::string PageSize(uint64_t kb) {
  return kb >= 1048576 ? absl::StrCat(kb / 1048576, "Gi") : absl::StrCat(kb / 1024, "Mi");
}

void Hugepages(const Ctx& c) {
  if (c.in.hugepages.empty()) return;
  uint64_t total = 0;
  for (const auto& [size, n] : c.in.hugepages) total += n;
  if (total > 0) return;
  std::vector<std::string> sizes;
  for (const auto& [size, n] : c.in.hugepages) {
    sizes.push_back(PageSize(size));
  }
  c.Add(roced::v1::SEVERITY_INFO, "node", "no hugepages reserved",
        absl::StrCat("sizes available: ", absl::StrJoin(sizes, ", "),
                     "; RDMA applications that register large buffers (DPDK, UCX/NCCL setups, SPDK) "
                     "expect a reserved pool, which gets harder to reserve the longer the node runs"),
        "reserve them in the config, e.g. `hugepages: [{size: 2Mi, count: 1024}]`");
}

void Memlock(const Ctx& c) {
  if (!c.in.memlock_bytes) return;
  c.Add(roced::v1::SEVERITY_WARNING, "roced",
        absl::StrCat("RLIMIT_MEMLOCK is ", *c.in.memlock_bytes / 1024, " KiB, not unlimited"),
        "memory registration pins pages and counts against this limit; registrations beyond it fail with "
        "ENOMEM (probes here, and the same limit typically applies to RDMA applications started the same "
        "way)",
        "LimitMEMLOCK=infinity in the systemd unit (as shipped), `memlock unlimited` in limits.conf for "
        "RDMA applications");
}

void Probes(const Ctx& c) {
  for (const auto& p : c.in.state.probes()) {
    if (p.last_success()) continue;
    std::string kind = roced::v1::ProbeKind_Name(p.kind());
    absl::StrReplaceAll({{"PROBE_KIND_", ""}}, &kind);
    c.Add(roced::v1::SEVERITY_WARNING, p.peer(),
          absl::StrCat("the latest ", absl::AsciiStrToLower(kind), " probe failed: ", p.last_failure_reason()),
          "see `rocectl probes " + p.peer() + "` for the history and the failure detail",
          absl::StrCat("peer_unavailable: is roced running there and reachable on ", model::defaults::kGrpcPort,
                       "? connect_timeout/timeout: is RoCE traffic passing (GIDs, MTU, firewall on UDP 4791)? "
                       "wc_error: the counters in the result"));
  }
}

void Converged(const Ctx& c) {
  const auto& cs = c.in.state.config();
  if (cs.generation() == 0 || cs.converged()) return;
  std::vector<std::string> bad;
  for (const auto& f : c.in.state.fields()) {
    if (f.sync() == roced::v1::FIELD_SYNC_IN_SYNC || f.sync() == roced::v1::FIELD_SYNC_NOT_MANAGEABLE) continue;
    std::string sync = roced::v1::FieldSync_Name(f.sync());
    absl::StrReplaceAll({{"FIELD_SYNC_", ""}}, &sync);
    bad.push_back(absl::StrCat(f.object(), " ", f.field(), ": ", sync,
                               f.message().empty() ? "" : absl::StrCat(" (", f.message(), ")")));
  }
  c.Add(roced::v1::SEVERITY_WARNING, "config",
        absl::StrCat("the accepted config (generation ", cs.generation(), ") is not in force"),
        bad.empty() ? "no field status yet" : absl::StrJoin(bad, "; "),
        cs.mode() == roced::v1::MODE_OBSERVE ? "observe mode reports drift without correcting it: "
                                               "`mode: enforce` to correct, or fix by hand"
                                             : "see `rocectl status`; failed fields name the kernel's answer");
}

// pause_without_ecn: a priority's pauses must rise by more than this over
// the window (a few pauses at a burst's start are normal even with ECN).
constexpr uint64_t kPauseGrowth = 1000;

std::optional<uint64_t> Growth(const std::optional<uint64_t>& from, const std::optional<uint64_t>& to) {
  if (!from || !to || *to < *from) return std::nullopt;  // not counted, or reset (driver reload)
  return *to - *from;
}

std::string GrowthText(const char* name, const std::optional<uint64_t>& from, const std::optional<uint64_t>& to) {
  if (!to) return absl::StrCat(name, " not counted");
  return absl::StrCat(name, " ", from.value_or(0), " -> ", *to);
}

// Whether the ECN side moved: true when a counter grew or none is kept.
bool EcnMoved(const metrics::CongestionCounters& a, const metrics::CongestionCounters& b) {
  bool counted = false;
  for (auto [from, to] : {std::pair{a.ecn_marked, b.ecn_marked}, std::pair{a.cnp_sent, b.cnp_sent},
                          std::pair{a.cnp_handled, b.cnp_handled}}) {
    std::optional<uint64_t> g = Growth(from, to);
    if (!g) continue;
    counted = true;
    if (*g > 0) return true;
  }
  return !counted;  // a driver without ECN counters (rxe) cannot be judged
}

void PauseWithoutEcnOn(const Ctx& c, const std::string& netdev, const metrics::CongestionCounters& a,
                       const metrics::CongestionCounters& b, absl::Duration span) {
  if (EcnMoved(a, b)) return;
  for (const auto& [prio, to] : b.pause_frames) {
    auto from = a.pause_frames.find(prio);
    if (from == a.pause_frames.end() || to < from->second || to - from->second <= kPauseGrowth) continue;
    c.Add(roced::v1::SEVERITY_WARNING, netdev,
          absl::StrFormat("PFC pause frames on priority %d rose by %d in %s while ECN marks and CNPs stayed flat",
                          prio, to - from->second, absl::FormatDuration(span)),
          absl::StrCat("pause frames (received + sent) ", from->second, " -> ", to, "; ",
                       GrowthText("ECN-marked packets", a.ecn_marked, b.ecn_marked), ", ",
                       GrowthText("CNPs sent", a.cnp_sent, b.cnp_sent), ", ",
                       GrowthText("CNPs handled", a.cnp_handled, b.cnp_handled),
                       ": congestion is absorbed by PFC alone, so it spreads upstream (head-of-line blocking, "
                       "pause storms) and DCQCN never slows the senders"),
          absl::StrCat("enable ECN marking on the switch queue of the RoCE traffic class with its threshold below "
                       "the PFC XOFF threshold, check the switch marks the DSCP RoCE uses, and the NICs' ECN on "
                       "priority ",
                       prio, " (`qos.ecn: {np_priorities: [", prio, "], rp_priorities: [", prio,
                       "]}`); `rocectl counters --netdev ", netdev, "` shows the counters"));
  }
}

void PauseWithoutEcn(const Ctx& c) {
  if (!c.in.congestion) return;
  const metrics::CongestionWindow& w = *c.in.congestion;
  if (!w.start) {
    c.Add(roced::v1::SEVERITY_INFO, "node", "no counter window yet: pauses vs ECN cannot be compared",
          absl::StrCat("counters sampled for ", absl::FormatDuration(w.sampled_for), "; the check compares "
                       "samples at least ", absl::FormatDuration(w.min_span), " apart"),
          "run the diagnosis again once the agent has been up for that long");
    return;
  }
  const absl::Duration span = w.end.at - w.start->at;
  for (const auto& [netdev, obs] : RoceNetdevs(c.in)) {
    auto a = w.start->netdevs.find(netdev);
    auto b = w.end.netdevs.find(netdev);
    if (a == w.start->netdevs.end() || b == w.end.netdevs.end()) continue;
    PauseWithoutEcnOn(c, netdev, a->second, b->second, span);
  }
}

// link_flaps: more carrier changes than this within the history's window.
constexpr size_t kMaxCarrierChanges = 3;

void LinkFlaps(const Ctx& c) {
  for (const metrics::LinkFlaps& f : c.in.link_flaps) {
    if (f.changes <= kMaxCarrierChanges || !f.last_change) continue;
    c.Add(roced::v1::SEVERITY_WARNING, f.netdev,
          absl::StrFormat("%d carrier changes in the last %s (last at %s, %s ago)", f.changes,
                          absl::FormatDuration(f.window),
                          absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", *f.last_change, absl::UTCTimeZone()),
                          absl::FormatDuration(absl::Trunc(f.as_of - *f.last_change, absl::Seconds(1)))),
          absl::StrCat("the kernel counts ", f.carrier_changes, " carrier changes since the netdev was created",
                       f.own_changes > 0 ? absl::StrCat(" (", f.own_changes, " more in the window were roced's own PFC "
                                                        "writes, which mlx5 answers with a link toggle: not counted)")
                                         : "",
                       "; each down/up breaks the RoCE connections over it (QPs retry, then fail with "
                       "retry-exceeded) and stalls the traffic while the link retrains"),
          absl::StrCat("check the cable or optic (`ethtool -m ", f.netdev, "` for the DOM levels, `ethtool ", f.netdev,
                       "`) and the switch port's error counters and log; reseat or replace the cable/optic"));
  }
}

// probe_baseline: figures needed on each side, and the changes that count.
constexpr int kMinBaselineResults = 3;
constexpr double kMaxP50Rise = 0.20;
constexpr double kMaxP99Rise = 0.50;
constexpr double kMaxBandwidthDrop = 0.10;

std::string VersionText(const roced::v1::ProbeFigures& f) {
  return absl::StrCat(f.driver(), f.driver_version().empty() ? "" : absl::StrCat(" ", f.driver_version()),
                      ", firmware ", f.fw_version().empty() ? "unknown" : f.fw_version());
}

std::string KindText(roced::v1::ProbeKind kind) {
  std::string name = roced::v1::ProbeKind_Name(kind);
  absl::StrReplaceAll({{"PROBE_KIND_", ""}}, &name);
  return absl::AsciiStrToLower(name);
}

void BaselineRegression(const Ctx& c, const roced::v1::ProbeBaseline& b, const char* figure,
                        const google::protobuf::RepeatedField<double>& before,
                        const google::protobuf::RepeatedField<double>& after, double limit, const char* unit) {
  if (before.size() < kMinBaselineResults || after.size() < kMinBaselineResults) return;
  const double was = probe::Median(before), now = probe::Median(after);
  if (was <= 0) return;
  const double change = (now - was) / was;
  if (limit > 0 ? change <= limit : change >= limit) return;
  c.Add(roced::v1::SEVERITY_WARNING, b.peer(),
        absl::StrFormat("%s to %s %s %.0f%% since the driver/firmware changed: %.2f -> %.2f %s", figure, b.peer(),
                        change > 0 ? "rose" : "fell", std::abs(change) * 100, was, now, unit),
        absl::StrFormat("%s probes (size %d) from %s, median of the last %d results under %s vs %d under %s",
                        KindText(b.kind()), b.size(),
                        b.device(), after.size(), VersionText(b.current()), before.size(),
                        VersionText(b.previous())),
        "confirm with perftest between the two nodes (ib_write_lat / ib_write_bw), read the release notes "
        "for changed defaults (congestion control, adaptive routing, PCIe settings), and roll the driver or "
        "firmware back if the regression stands");
}

void ProbeBaseline(const Ctx& c) {
  for (const auto& b : c.in.probe_baselines.baselines()) {
    if (!b.has_previous()) continue;
    const roced::v1::ProbeFigures &was = b.previous(), &now = b.current();
    BaselineRegression(c, b, "latency p50", was.p50_us(), now.p50_us(), kMaxP50Rise, "us");
    BaselineRegression(c, b, "latency p99", was.p99_us(), now.p99_us(), kMaxP99Rise, "us");
    BaselineRegression(c, b, "bandwidth", was.gbps(), now.gbps(), -kMaxBandwidthDrop, "Gb/s");
  }
}

// The NUMA node each CPU belongs to.
std::map<uint32_t, int32_t> CpuNodes(const Inputs& in) {
  std::map<uint32_t, int32_t> nodes;
  for (const auto& [node, cpus] : in.numa_cpus) {
    for (uint32_t cpu : cpus) nodes[cpu] = node;
  }
  return nodes;
}

// The NUMA nodes `cpus` fall on, as "1" or "1,2".
std::string NodesOf(const hal::CpuSet& cpus, const std::map<uint32_t, int32_t>& cpu_nodes) {
  std::set<int32_t> nodes;
  for (uint32_t cpu : cpus) {
    if (auto it = cpu_nodes.find(cpu); it != cpu_nodes.end()) nodes.insert(it->second);
  }
  return absl::StrJoin(nodes, ",");
}

bool AnyOn(const hal::CpuSet& cpus, const hal::CpuSet& node_cpus) {
  return std::any_of(cpus.begin(), cpus.end(), [&](uint32_t c) { return node_cpus.count(c) > 0; });
}

std::string DeviceName(const roced::v1::RdmaDevice& dev) {
  return absl::StrCat(dev.name(), " (", dev.pci_address(), dev.pci_address().empty() ? "" : ", ", "NUMA node ",
                      dev.numa_node(), ")");
}

void NumaHugepages(const Ctx& c, const roced::v1::RdmaDevice& dev) {
  std::vector<std::string> elsewhere;
  uint64_t largest_kb = 0;
  uint64_t largest_pages = 0;
  for (const auto& [node, pools] : c.in.numa_hugepages) {
    for (const auto& [kb, pages] : pools) {
      if (pages == 0) continue;
      if (node == dev.numa_node()) return;  // some are local
      elsewhere.push_back(absl::StrCat("node ", node, ": ", pages, " x ", kb, " kB"));
      if (pages * kb > largest_pages * largest_kb) std::tie(largest_kb, largest_pages) = std::tie(kb, pages);
    }
  }
  if (elsewhere.empty()) return;  // none at all: the hugepages check says it
  c.Add(roced::v1::SEVERITY_WARNING, DeviceName(dev),
        absl::StrCat("hugepages are reserved only on other NUMA nodes, none on the NIC's node ", dev.numa_node()),
        absl::StrCat(absl::StrJoin(elsewhere, "; "),
                     "; RDMA buffers taken from these pools sit across the inter-socket link from the NIC, "
                     "so every DMA crosses it (less bandwidth, more latency)"),
        absl::StrFormat("reserve the pool on the NIC's node: `hugepages: [{size: %s, count: %d, numa_node: %d}]`",
                        PageSize(largest_kb), largest_pages, dev.numa_node()));
}

void NumaAllowedCpus(const Ctx& c, const roced::v1::RdmaDevice& dev, const hal::CpuSet& node_cpus) {
  if (c.in.allowed_cpus.empty() || node_cpus.empty() || AnyOn(c.in.allowed_cpus, node_cpus)) return;
  c.Add(roced::v1::SEVERITY_WARNING, DeviceName(dev),
        absl::StrCat("roced may run only on CPUs ", hal::FormatCpuList(c.in.allowed_cpus), " (NUMA node ",
                     NodesOf(c.in.allowed_cpus, CpuNodes(c.in)), "), none on the NIC's node ", dev.numa_node(),
                     " (CPUs ", hal::FormatCpuList(node_cpus), ")"),
        "probes run from across the inter-socket link and their latency includes it; RDMA applications "
        "started with the same affinity pay the same",
        absl::StrCat("include node ", dev.numa_node(), "'s CPUs in the unit's CPUAffinity= (or run "
                     "`numactl --cpunodebind=", dev.numa_node(), "`), for applications too"));
}

void NumaIrqs(const Ctx& c, const roced::v1::RdmaDevice& dev, const hal::CpuSet& node_cpus) {
  auto it = c.in.device_irqs.find(dev.name());
  if (it == c.in.device_irqs.end() || node_cpus.empty()) return;
  const std::map<uint32_t, int32_t> cpu_nodes = CpuNodes(c.in);
  std::vector<std::string> remote;
  for (const auto& [irq, cpus] : it->second) {
    if (cpus.empty() || AnyOn(cpus, node_cpus)) continue;
    remote.push_back(absl::StrCat(irq, " -> CPUs ", hal::FormatCpuList(cpus), " (node ", NodesOf(cpus, cpu_nodes),
                                  ")"));
  }
  if (remote.empty()) return;
  const size_t n = remote.size();
  if (n > 8) {
    remote.resize(8);
    remote.push_back("...");
  }
  c.Add(roced::v1::SEVERITY_WARNING, DeviceName(dev),
        absl::StrCat(n, " of ", it->second.size(), " IRQs are pinned to CPUs off the NIC's NUMA node ",
                     dev.numa_node()),
        absl::StrCat(absl::StrJoin(remote, "; "),
                     "; completion and event interrupts are then handled across the inter-socket link"),
        absl::StrCat("pin them to node ", dev.numa_node(), "'s CPUs ", hal::FormatCpuList(node_cpus),
                     " (/proc/irq/<n>/smp_affinity_list, mlnx-tools' set_irq_affinity_cpulist.sh), and keep "
                     "irqbalance from moving them back"));
}

void NumaLocality(const Ctx& c) {
  for (const auto& dev : c.in.state.devices()) {
    if (dev.numa_node() < 0) continue;  // no NUMA information: nothing to compare
    auto node = c.in.numa_cpus.find(dev.numa_node());
    const hal::CpuSet none;
    const hal::CpuSet& node_cpus = node == c.in.numa_cpus.end() ? none : node->second;
    NumaHugepages(c, dev);
    NumaAllowedCpus(c, dev, node_cpus);
    NumaIrqs(c, dev, node_cpus);
  }
  const probe::BufferBindFailures& binds = c.in.probe_buffer_binds;
  if (binds.count == 0) return;
  c.Add(roced::v1::SEVERITY_WARNING, "probe buffers",
        absl::StrCat(binds.count, " probe buffer(s) could not be bound to their NIC's NUMA node (last: node ",
                     binds.node, ", ", binds.error, ")"),
        "mbind(2) failed, so the buffers sit wherever the kernel put them: probe latencies from a NIC on the "
        "other socket include the cross-socket hop and are off against perftest run with numactl",
        "allow mbind(2): the systemd unit does (SystemCallFilter=mbind); under the DaemonSet's RuntimeDefault "
        "seccomp it needs SYS_NICE, as deploy/kubernetes/daemonset.yaml grants");
}

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

// The largest maxerror of a synchronised clock that still passes: the
// discipline daemons keep it well below (chronyd, ptp4l+phc2sys: ms or
// less); beyond 100 ms, timestamps across nodes no longer line up.
constexpr int64_t kClockMaxErrorBoundUs = 100000;

void ClockSync(const Ctx& c) {
  if (!c.in.clock) return;
  const hal::KernelClock& k = *c.in.clock;
  const bool unsync = hal::ClockStatusIsError(k.status);
  const std::string values =
      absl::StrFormat("adjtimex: state %d%s, status %s, maxerror %d us, esterror %d us, offset %d ns", k.state,
                      k.state == TIME_ERROR ? " (TIME_ERROR)" : "", hal::ClockStatusNames(k.status), k.max_error_us,
                      k.est_error_us, k.offset_ns);
  if (unsync) {
    c.Add(roced::v1::SEVERITY_WARNING, "system clock", "the system clock is not synchronised",
          absl::StrCat(values, "; logs, probe timestamps and counters of different nodes cannot be lined up, "
                               "and the field guides trace irregular latency jitter to bad time sync"),
          "run a time service (chronyd, or ptp4l + phc2sys where the NICs have PTP clocks) and check "
          "`chronyc tracking` / `timedatectl`");
  } else if (k.max_error_us > kClockMaxErrorBoundUs) {
    c.Add(roced::v1::SEVERITY_WARNING, "system clock",
          absl::StrCat("the clock's maximum error is ", k.max_error_us / 1000, " ms (bound ",
                       kClockMaxErrorBoundUs / 1000, " ms)"),
          absl::StrCat(values, "; the time service updates the kernel rarely or tracks a poor source"),
          "check the time service's sources and its state (`chronyc tracking`, `pmc -u -b 0 'GET TIME_STATUS_NP'`)");
  }
  if (!unsync || c.in.ptp_clocks.empty()) return;
  std::vector<std::string> clocks;
  for (const auto& p : c.in.ptp_clocks) {
    clocks.push_back(p.clock_name.empty() ? p.name : absl::StrCat(p.name, " (", p.clock_name, ")"));
  }
  c.Add(roced::v1::SEVERITY_WARNING, absl::StrJoin(clocks, ", "),
        "PTP hardware clocks are present but nothing synchronises the system clock",
        absl::StrCat(values, "; the NICs can timestamp PTP in hardware, yet the kernel's clock is free-running"),
        absl::StrCat("run ptp4l on the PTP port (`ptp4l -i <netdev> -H`) and phc2sys to steer the system clock "
                     "from ", c.in.ptp_clocks[0].name, " (`phc2sys -s <netdev> -w`), or chronyd with a PHC refclock"));
}

// Why a check has nothing to look at (it is then skipped, not passed), or
// null when it has its inputs.
using SkipReason = const char* (*)(const Inputs&);

const char* NoRocePort(const Inputs& in) {
  bool any = false;
  ForEachRocePort(in, [&](const roced::v1::RdmaDevice&, const roced::v1::Port&) { any = true; });
  return any ? nullptr : "no RoCE port was discovered";
}
const char* NoObservedNetdev(const Inputs& in) {
  if (const char* r = NoRocePort(in)) return r;
  for (const auto& [netdev, obs] : RoceNetdevs(in)) {
    if (obs != nullptr) return nullptr;
  }
  return "the kernel state (DCB, ECN, rdma_cm, MTU) of no RoCE netdev could be read";
}
const char* NoDevice(const Inputs& in) {
  return in.state.devices().empty() ? "no RDMA device was discovered" : nullptr;
}
const char* NoHugepageRead(const Inputs& in) {
  return in.hugepages.empty() ? "the hugepage pools could not be read" : nullptr;
}
const char* NoProbeResult(const Inputs& in) {
  return in.state.probes().empty() ? "no probe has run yet" : nullptr;
}
const char* NoCongestionWindow(const Inputs& in) {
  return in.congestion ? nullptr : "the agent samples no congestion counters (no counters runtime)";
}
const char* NoLinkWatched(const Inputs& in) {
  return in.link_flaps.empty() ? "no RoCE netdev's carrier is watched" : nullptr;
}
const char* NoBaseline(const Inputs& in) {
  return in.probe_baselines.baselines().empty() ? "no probe baseline is recorded yet" : nullptr;
}
const char* NoNumaTopology(const Inputs& in) {
  if (const char* r = NoDevice(in)) return r;
  return in.numa_cpus.empty() ? "the NUMA topology could not be read" : nullptr;
}
const char* NoNeighbourTable(const Inputs& in) {
  if (in.neighbours.empty()) return "no RoCE netdev's neighbour table was read (not the running kernel's netdevs?)";
  return PeerAddresses(in).empty() ? "no probe peer has an address" : nullptr;
}
const char* NoArpSysctls(const Inputs& in) {
  return in.arp_sysctls.empty() ? "no RoCE netdev's ARP sysctls could be read" : nullptr;
}
const char* NoClock(const Inputs& in) { return in.clock ? nullptr : "adjtimex failed"; }

struct Check {
  CheckInfo info;
  void (*run)(const Ctx&);
  SkipReason skip = nullptr;  // null: the check always has its inputs
};

const std::vector<Check>& All() {
  static const std::vector<Check> checks = {
      {{"port_state", "RoCE ports that are not ACTIVE"}, PortState, NoRocePort},
      {{"roce_v2_gid", "RoCE ports without a RoCE v2 GID carrying a routable IP"}, RoceV2Gid, NoRocePort},
      {{"roce_mode", "rdma_cm's default RoCE mode left at v1"}, RoceMode, NoObservedNetdev},
      {{"pfc_dscp", "RoCE DSCP vs PFC priorities and trust"}, PfcDscp, NoObservedNetdev},
      {{"switch_alignment", "the host's PFC, DSCP map, MTU and willing bit against the switch's LLDP"},
       SwitchAlignment, NoObservedNetdev},
      {{"dcbx_mode", "RoCE ports whose DCBX the NIC firmware runs (host writes replaced)"}, DcbxMode, NoObservedNetdev},
      {{"ecn", "ECN notification/reaction point on the PFC priorities"}, Ecn, NoObservedNetdev},
      {{"mtu", "RoCE MTU below 4096 because of the netdev MTU"}, Mtu, NoObservedNetdev},
      {{"pcie", "NICs trained below their PCIe width or speed"}, Pcie, NoDevice},
      {{"hugepages", "no hugepages reserved"}, Hugepages, NoHugepageRead},
      {{"memlock", "the agent's locked-memory limit"}, Memlock},
      {{"probes", "peers whose latest probe failed"}, Probes, NoProbeResult},
      {{"converged", "the accepted config not in force"}, Converged},
      {{"pause_without_ecn", "PFC pauses rising while ECN marks and CNPs stay flat"}, PauseWithoutEcn,
       NoCongestionWindow},
      {{"link_flaps", "RoCE netdevs whose carrier changed more than 3 times in 6 h"}, LinkFlaps, NoLinkWatched},
      {{"probe_baseline", "probe figures worse than under the previous driver/firmware"}, ProbeBaseline, NoBaseline},
      {{"numa_locality", "hugepages, the agent's CPUs and the NIC's IRQs vs the NIC's NUMA node"}, NumaLocality,
       NoNumaTopology},
      {{"neighbours", "probe peers' addresses without a resolved neighbour entry"}, Neighbours, NoNeighbourTable},
      {{"arp_flux", "RoCE netdevs in one subnet without ARP/rp_filter sysctls"}, ArpFlux, NoArpSysctls},
      {{"clock_sync", "the system clock not synchronised; PTP clocks unused"}, ClockSync, NoClock},
  };
  return checks;
}

}  // namespace

std::map<std::string, std::string> PeerAddresses(const Inputs& in) {
  std::map<std::string, std::string> out;
  for (const auto& p : in.state.probes()) {
    if (!p.peer_data_ip().empty()) out.emplace(p.peer_data_ip(), p.peer());
  }
  for (const auto& p : in.state.config().desired().probes().peers()) {
    if (auto ip = util::IpOfHostPort(p.address())) out.emplace(*ip, p.name().empty() ? p.address() : p.name());
  }
  return out;
}

const std::vector<CheckInfo>& Checks() {
  static const std::vector<CheckInfo> infos = [] {
    std::vector<CheckInfo> v;
    for (const auto& c : All()) v.push_back(c.info);
    return v;
  }();
  return infos;
}

absl::StatusOr<std::vector<roced::v1::Finding>> Run(const Inputs& inputs, const std::vector<std::string>& only,
                                                    std::vector<SkippedCheck>* skipped) {
  std::set<std::string> wanted(only.begin(), only.end());
  for (const auto& name : wanted) {
    bool known = std::any_of(All().begin(), All().end(), [&](const Check& c) { return name == c.info.name; });
    if (!known) {
      std::vector<std::string> names;
      for (const auto& c : All()) names.push_back(c.info.name);
      return absl::InvalidArgumentError(
          absl::StrCat("checks: unknown check '", name, "'; known: ", absl::StrJoin(names, ", ")));
    }
  }
  std::vector<roced::v1::Finding> findings;
  for (const auto& c : All()) {
    if (!wanted.empty() && !wanted.count(c.info.name)) continue;
    if (const char* why = c.skip != nullptr ? c.skip(inputs) : nullptr) {
      if (skipped != nullptr) skipped->push_back({c.info.name, why});
      continue;
    }
    c.run(Ctx{inputs, &findings, c.info.name});
  }
  std::stable_sort(findings.begin(), findings.end(),
                   [](const roced::v1::Finding& a, const roced::v1::Finding& b) { return a.severity() > b.severity(); });
  return findings;
}

}  // namespace roced::diagnose

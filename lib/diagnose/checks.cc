#include "diagnose/checks.h"

#include <algorithm>
#include <functional>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/ascii.h"

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

void Hugepages(const Ctx& c) {
  if (c.in.hugepages.empty()) return;
  uint64_t total = 0;
  for (const auto& [size, n] : c.in.hugepages) total += n;
  if (total > 0) return;
  std::vector<std::string> sizes;
  for (const auto& [size, n] : c.in.hugepages) {
    sizes.push_back(size >= 1048576 ? absl::StrCat(size / 1048576, "Gi") : absl::StrCat(size / 1024, "Mi"));
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
          "peer_unavailable: is roced running there and reachable on 7471? connect_timeout/timeout: is "
          "RoCE traffic passing (GIDs, MTU, firewall on UDP 4791)? wc_error: the counters in the result");
  }
}

void Converged(const Ctx& c) {
  const auto& cs = c.in.state.config();
  if (cs.generation() == 0 || cs.converged()) return;
  std::vector<std::string> bad;
  for (const auto& f : c.in.state.fields()) {
    if (f.sync() == roced::v1::FIELD_SYNC_IN_SYNC) continue;
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

struct Check {
  CheckInfo info;
  void (*run)(const Ctx&);
};

const std::vector<Check>& All() {
  static const std::vector<Check> checks = {
      {{"port_state", "RoCE ports that are not ACTIVE"}, PortState},
      {{"roce_v2_gid", "RoCE ports without a RoCE v2 GID carrying a routable IP"}, RoceV2Gid},
      {{"roce_mode", "rdma_cm's default RoCE mode left at v1"}, RoceMode},
      {{"pfc_dscp", "RoCE DSCP vs PFC priorities and trust"}, PfcDscp},
      {{"ecn", "ECN notification/reaction point on the PFC priorities"}, Ecn},
      {{"mtu", "RoCE MTU below 4096 because of the netdev MTU"}, Mtu},
      {{"pcie", "NICs trained below their PCIe width or speed"}, Pcie},
      {{"hugepages", "no hugepages reserved"}, Hugepages},
      {{"memlock", "the agent's locked-memory limit"}, Memlock},
      {{"probes", "peers whose latest probe failed"}, Probes},
      {{"converged", "the accepted config not in force"}, Converged},
  };
  return checks;
}

}  // namespace

const std::vector<CheckInfo>& Checks() {
  static const std::vector<CheckInfo> infos = [] {
    std::vector<CheckInfo> v;
    for (const auto& c : All()) v.push_back(c.info);
    return v;
  }();
  return infos;
}

absl::StatusOr<std::vector<roced::v1::Finding>> Run(const Inputs& inputs, const std::vector<std::string>& only) {
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
    c.run(Ctx{inputs, &findings, c.info.name});
  }
  std::stable_sort(findings.begin(), findings.end(),
                   [](const roced::v1::Finding& a, const roced::v1::Finding& b) { return a.severity() > b.severity(); });
  return findings;
}

}  // namespace roced::diagnose

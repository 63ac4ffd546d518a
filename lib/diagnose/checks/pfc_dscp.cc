// The diagnose check `pfc_dscp`: RoCE's DSCP must map to a priority with PFC
// on; PFC on a priority no DSCP maps to, PFC with PCP trust, or no PFC at all
// is a misconfiguration.
#include "diagnose/check.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace roced::diagnose {

namespace {

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

}  // namespace

const Check kPfcDscpCheck = {{"pfc_dscp", "RoCE DSCP vs PFC priorities and trust",
                        "each RoCE netdev's PFC, DSCP map, trust and RoCE ToS (netdevs, the config)",
                        "RoCE's DSCP must map to a priority with PFC on; PFC on a priority no DSCP maps to, PFC with PCP trust, or no PFC at all is a misconfiguration"},
                       PfcDscp, NoObservedNetdev};

}  // namespace roced::diagnose

// The diagnose check `dcbx_mode`: when the NIC firmware runs DCBX, host DCB
// writes are replaced by what the switch advertises.
#include "diagnose/check.h"

#include "absl/strings/str_cat.h"
#include "hal/dcb_netlink.h"
#include "hal/driver_profile.h"

namespace roced::diagnose {

namespace {

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

}  // namespace

const Check kDcbxModeCheck = {{"dcbx_mode", "RoCE ports whose DCBX the NIC firmware runs (host writes replaced)",
                        "each RoCE netdev's DCBX mode and driver (netdevs)",
                        "when the NIC firmware runs DCBX, host DCB writes are replaced by what the switch advertises"},
                       DcbxMode, NoObservedNetdev};

}  // namespace roced::diagnose

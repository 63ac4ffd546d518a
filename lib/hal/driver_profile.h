// What roced knows of each RoCE NIC driver: how each managed field reaches
// the NIC on it (its surface), whether roced can manage it there, and the
// driver's own rules a declarative agent must follow to converge instead of
// fighting the NIC. One profile per driver, found by the name `ethtool -i`
// reports (hal/ethtool_info.h); docs/drivers.md holds the sources, a row
// per behaviour and a column per driver (Linux 6.1.192: mlx5's en_dcbnl.c,
// bnxt_en's bnxt_dcb.c, ice's ice_dcb_nl.c and ice_dcb_lib.c, bnxt_re's
// configfs, irdma's module parameters).
//
// Pure data: no I/O. Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace roced::hal {

enum class DriverFamily { kOther, kMlx5, kBnxt, kIce };

// What a DSCP app entry added for a DSCP that already maps to another
// priority does.
enum class DscpRemap {
  // mlx5e_dcbnl_ieee_setapp replaces the old entry (and refuses to delete
  // it afterwards): add the new entry first, so the port never passes
  // through PCP trust.
  kAddReplaces,
  // bnxt_en keeps both entries and its firmware unmaps the DSCP when the
  // old one is deleted; ice refuses the add (-EINVAL: "already user
  // mapped"): delete the old entry first, then add the new one.
  kDeleteFirst,
};

struct DriverProfile {
  DriverFamily family;
  const char* name;         // the profile's name: "mlx5", "bnxt_en", "ice", "other"
  const char* rdma_driver;  // its RDMA driver: "mlx5_ib", "bnxt_re", "irdma"
  DscpRemap dscp_remap;
  // ice: in L3 DSCP mode (any DSCP app entry) priority i stays on TC i;
  // ice_dcbnl_setets leaves the priority map as it is, silently.
  bool dscp_mode_fixes_priority_map;
  // bnxt_en: setpfc is -EINVAL until an ETS configuration was set
  // (bnxt_hwrm_queue_pfc_cfg) and pfc_cap counts lossless traffic classes.
  bool pfc_needs_ets;
  // ice: the PFC delay is the port's register (ice_get_pfc_delay), never
  // what setpfc was given.
  bool pfc_delay_is_port_own;
  // Which DCB writes the driver may answer by resetting the netdev: ice
  // every effective ETS, PFC and app change (ice_dcbnl_devreset); bnxt_en
  // an ETS write that changes the TC count (bnxt_setup_mq_tc) and a PFC
  // write that moves a class onto a lossless queue (bnxt_queue_remap), not
  // its app writes. (mlx5's link toggle on a pfc_en change is known apart.)
  struct Resets {
    bool ets;
    bool pfc;
    bool app;
  } resets;
  // Whether setdcbx can take host mode (mlx5); otherwise `host_mode_fix`
  // says how the operator does it.
  bool host_mode_by_setdcbx;
  // The agent in the NIC that owns DCB when getdcbx reports no host mode,
  // and what the operator runs to give DCB to the host (`{netdev}` is
  // replaced by the port's netdev).
  const char* firmware_agent;
  const char* host_mode_fix;
};

// The profile of a driver by its ethtool -i name ("mlx5_core", "bnxt_en",
// "ice"); the "other" profile for any other name (generic kernel
// interfaces, no driver-specific rules).
const DriverProfile& ProfileFor(std::string_view driver);

// `profile.host_mode_fix` for `netdev`.
std::string HostModeFix(const DriverProfile& profile, std::string_view netdev);

// How one managed field (a config path, or a group of them: "qos.dcqcn",
// "qos.ecn") reaches the NIC on a driver.
struct FieldSurface {
  std::string field;
  std::string surface;  // "dcbnl app table", "rtnetlink", "bnxt_re configfs", ...
  bool manageable = false;
  // Not manageable: why, and what the operator can do. Manageable: the
  // driver's rule roced follows there ("" when none).
  std::string note;
};

// Every field's surface on `profile`'s driver, in the field table's order.
// `present` names the fields whose control the node was seen to have
// (e.g. "qos.ecn" when MLNX_OFED's ecn/ files exist, "qos.buffers" when
// the driver answers getbuffer): a field a driver has only on some cards
// or installs is manageable exactly where present.
std::vector<FieldSurface> FieldSurfaces(const DriverProfile& profile, const std::vector<std::string>& present);

// The surface of one field (a config path such as "qos.ecn.np_priorities"
// or "qos.dcqcn.rpg_ai_rate" is looked up under its group).
FieldSurface SurfaceOf(const DriverProfile& profile, std::string_view field, bool present);

}  // namespace roced::hal

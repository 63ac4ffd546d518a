#include "hal/driver_profile.h"

#include <array>
#include <cctype>


namespace roced::hal {
namespace {

enum class Manage { kYes, kIfPresent, kNo };

struct SurfaceRow {
  std::string_view field;
  std::string_view surface;
  Manage manage;
  std::string_view note;
};

constexpr size_t kFields = 11;
using SurfaceTable = std::array<SurfaceRow, kFields>;

// The rows every driver shares: MTU through rtnetlink, the rdma_cm
// defaults through configfs (drivers/infiniband/core/cma_configfs.c).
constexpr SurfaceRow kMtu{"mtu", "rtnetlink (IFLA_MTU)", Manage::kYes, ""};
constexpr SurfaceRow kRoceMode{"roce.default_mode", "rdma_cm configfs", Manage::kYes, ""};
constexpr SurfaceRow kRoceTos{"roce.default_tos", "rdma_cm configfs", Manage::kYes, ""};

constexpr SurfaceTable kMlx5Surfaces{{
    kMtu,
    {"qos.dcbx_mode", "dcbnl setdcbx", Manage::kYes,
     "host mode taken with setdcbx (mlx5e_dcbnl_setdcbx); in firmware mode the switch's DCBX replaces host writes"},
    {"qos.dscp_to_priority", "dcbnl app table (DSCP)", Manage::kYes,
     "the first entry switches the port to DSCP trust, the last delete back to PCP (mlx5e_set_trust_state)"},
    {"qos.ets", "dcbnl IEEE ETS", Manage::kYes,
     "strict and vendor classes read back at 100% before the 2026 fix (mlx5e_dcbnl_ieee_getets)"},
    {"qos.pfc", "dcbnl IEEE PFC", Manage::kYes, "a pfc_en change toggles the link (mlx5e_dcbnl_ieee_setpfc)"},
    {"qos.buffers", "dcbnl buffer", Manage::kIfPresent,
     "ConnectX-5 and later (MLX5_BUFFER_SUPPORTED); sizes kept in 128-byte cells"},
    {"qos.pfc_prevention", "ethtool tunable pfc-prevention-tout", Manage::kIfPresent,
     "with the PCAM pfcc_mask and stall-detect capabilities"},
    {"qos.dcqcn", "MLNX_OFED sysfs ecn/, else debugfs mlx5/<pci>/cc_params", Manage::kIfPresent,
     "debugfs needs it mounted and CAP_SYS_ADMIN"},
    {"qos.ecn", "MLNX_OFED sysfs ecn/<role>/enable/<prio>", Manage::kIfPresent,
     "the inbox mlx5 driver has no per-priority ECN enables (MLNX_OFED adds them)"},
    kRoceMode,
    kRoceTos,
}};

constexpr SurfaceTable kBnxtSurfaces{{
    kMtu,
    {"qos.dcbx_mode", "NVM (firmware LLDP/DCBX agent)", Manage::kNo,
     "bnxt_en takes its DCBX mode from NVM: setdcbx is refused while the firmware agent runs "
     "(bnxt_dcbnl_setdcbx)"},
    {"qos.dscp_to_priority", "dcbnl app table -> firmware DSCP table", Manage::kYes,
     "a remapped DSCP is deleted before it is added again: the firmware unmaps a DSCP on delete "
     "(bnxt_hwrm_queue_dscp2pri_cfg)"},
    {"qos.ets", "dcbnl IEEE ETS", Manage::kYes,
     "strict and ETS only; a 0% ETS class is refused when the others sum to 100; a new TC count closes and "
     "opens the NIC (bnxt_ets_validate, bnxt_setup_mq_tc)"},
    {"qos.pfc", "dcbnl IEEE PFC", Manage::kYes,
     "needs an ETS configuration first; pfc_cap lossless traffic classes at most, each moved onto a lossless "
     "queue, which closes and opens the NIC (bnxt_hwrm_queue_pfc_cfg, bnxt_queue_remap)"},
    {"qos.buffers", "none", Manage::kNo, "bnxt_en has no dcbnl buffer ops"},
    {"qos.pfc_prevention", "none", Manage::kNo, "bnxt_en has no pfc-prevention-tout tunable"},
    {"qos.dcqcn", "bnxt_re configfs (out-of-tree driver only)", Manage::kNo,
     "the inbox bnxt_re has no congestion-control interface; Broadcom's out-of-tree bnxt_re sets it in configfs "
     "(/sys/kernel/config/bnxt_re/<dev>/ports/1/cc, then apply), which roced does not drive: set it there"},
    {"qos.ecn", "bnxt_re configfs (out-of-tree driver only)", Manage::kNo,
     "bnxt_re has no per-priority ECN enables (Broadcom's out-of-tree bnxt_re has one switch, cc/ecn_enable)"},
    kRoceMode,
    kRoceTos,
}};

constexpr SurfaceTable kIceSurfaces{{
    kMtu,
    {"qos.dcbx_mode", "ethtool private flag fw-lldp-agent", Manage::kNo,
     "ice refuses setdcbx while its firmware LLDP agent runs (ice_dcbnl_setdcbx); the agent is switched with "
     "the fw-lldp-agent private flag, which roced leaves to the operator"},
    {"qos.dscp_to_priority", "dcbnl app table (DSCP)", Manage::kYes,
     "the first entry switches the port to L3 DSCP mode and resets ETS; a remapped DSCP is deleted first "
     "(an add for a mapped DSCP is -EINVAL); the last delete returns to L2 VLAN mode with the default ETS and "
     "PFC (ice_dcbnl_setapp, ice_dcbnl_delapp)"},
    {"qos.ets", "dcbnl IEEE ETS", Manage::kYes,
     "in L3 DSCP mode priority i stays on TC i: qos.ets.priority_to_tc is not applied; the bandwidth of the "
     "TCs in use sums to 100; a change resets the netdev (ice_dcbnl_setets, ice_dcb_bwchk)"},
    {"qos.pfc", "dcbnl IEEE PFC", Manage::kYes,
     "a change resets the netdev; the delay is the port's own (ice_dcbnl_setpfc, ice_get_pfc_delay)"},
    {"qos.buffers", "none", Manage::kNo, "ice has no dcbnl buffer ops"},
    {"qos.pfc_prevention", "none", Manage::kNo, "ice has no pfc-prevention-tout tunable"},
    {"qos.dcqcn", "irdma module parameters (out-of-tree driver only, read at load)", Manage::kNo,
     "the inbox irdma creates every RoCE QP with DCQCN off and has no knob; Intel's out-of-tree irdma reads "
     "dcqcn_enable and dcqcn_* once, at load (0444): set them in modprobe.d and reload irdma"},
    {"qos.ecn", "irdma module parameters (out-of-tree driver only, read at load)", Manage::kNo,
     "irdma has no per-priority ECN enables; ECN follows DCQCN (Intel's out-of-tree irdma: dcqcn_enable)"},
    kRoceMode,
    kRoceTos,
}};

constexpr SurfaceTable kOtherSurfaces{{
    kMtu,
    {"qos.dcbx_mode", "dcbnl setdcbx", Manage::kIfPresent, ""},
    {"qos.dscp_to_priority", "dcbnl app table (DSCP)", Manage::kIfPresent, ""},
    {"qos.ets", "dcbnl IEEE ETS", Manage::kIfPresent, ""},
    {"qos.pfc", "dcbnl IEEE PFC", Manage::kIfPresent, ""},
    {"qos.buffers", "dcbnl buffer", Manage::kIfPresent, ""},
    {"qos.pfc_prevention", "ethtool tunable pfc-prevention-tout", Manage::kIfPresent, ""},
    {"qos.dcqcn", "MLNX_OFED sysfs ecn/ or debugfs cc_params", Manage::kIfPresent, ""},
    {"qos.ecn", "MLNX_OFED sysfs ecn/<role>/enable/<prio>", Manage::kIfPresent, ""},
    kRoceMode,
    kRoceTos,
}};

constexpr DriverProfile kMlx5{DriverFamily::kMlx5,
                              "mlx5",
                              "mlx5_ib",
                              DscpRemap::kAddReplaces,
                              false,
                              false,
                              false,
                              {false, false, false},
                              true,
                              "the ConnectX firmware's DCBX agent (firmware mode)",
                              "set qos.dcbx_mode: host (roced takes host mode with setdcbx), or "
                              "mlxconfig -d <pci> set LLDP_NB_DCBX_P1=0 and reboot"};
constexpr DriverProfile kBnxt{DriverFamily::kBnxt,
                              "bnxt_en",
                              "bnxt_re",
                              DscpRemap::kDeleteFirst,
                              false,
                              true,
                              false,
                              {true, true, false},
                              false,
                              "the NIC firmware's LLDP/DCBX agent (LLD_MANAGED, from NVM)",
                              "turn the firmware LLDP/DCBX agent off in NVM (Broadcom's niccli or bnxtnvm) and "
                              "reload bnxt_en: {netdev} then reports host mode"};
constexpr DriverProfile kIce{DriverFamily::kIce,
                             "ice",
                             "irdma",
                             DscpRemap::kDeleteFirst,
                             true,
                             false,
                             true,
                             {true, true, true},
                             false,
                             "the E810 firmware's LLDP agent (private flag fw-lldp-agent on)",
                             "ethtool --set-priv-flags {netdev} fw-lldp-agent off"};
constexpr DriverProfile kOther{DriverFamily::kOther, "other", "", DscpRemap::kAddReplaces, false, false, false,
                               {false, false, false}, true, "the NIC's firmware or an LLDP agent",
                               "set qos.dcbx_mode: host (roced takes host mode with setdcbx), or stop the "
                               "LLDP agent that manages {netdev}"};

const SurfaceTable& TableOf(const DriverProfile& p) {
  switch (p.family) {
    case DriverFamily::kMlx5: return kMlx5Surfaces;
    case DriverFamily::kBnxt: return kBnxtSurfaces;
    case DriverFamily::kIce: return kIceSurfaces;
    case DriverFamily::kOther: break;
  }
  return kOtherSurfaces;
}

FieldSurface Build(const SurfaceRow& row, std::string_view field, bool present) {
  FieldSurface s{std::string(field), std::string(row.surface), false, std::string(row.note)};
  switch (row.manage) {
    case Manage::kYes: s.manageable = true; break;
    case Manage::kNo: s.manageable = false; break;
    case Manage::kIfPresent:
      s.manageable = present;
      if (!present && s.note.empty()) s.note = "the driver does not answer for it on this port";
      break;
  }
  return s;
}

}  // namespace

const DriverProfile& ProfileFor(std::string_view driver) {
  if (driver == "mlx5_core") return kMlx5;
  if (driver == "bnxt_en") return kBnxt;
  if (driver == "ice") return kIce;
  return kOther;
}

std::string HostModeFix(const DriverProfile& profile, std::string_view name) {
  // A name a shell would read otherwise is quoted (Linux allows any byte
  // but '/', ':', whitespace and NUL in one).
  std::string quoted(name);
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '@')) {
      quoted = "'";
      for (char q : name) quoted += q == '\'' ? std::string("'\\''") : std::string(1, q);
      quoted += "'";
      break;
    }
  }
  const std::string_view netdev = quoted;
  std::string out(profile.host_mode_fix);
  constexpr std::string_view kNetdev = "{netdev}";
  for (size_t at = out.find(kNetdev); at != std::string::npos; at = out.find(kNetdev, at + netdev.size())) {
    out.replace(at, kNetdev.size(), netdev);
  }
  return out;
}

FieldSurface SurfaceOf(const DriverProfile& profile, std::string_view field, bool present) {
  for (const SurfaceRow& row : TableOf(profile)) {
    // "qos.ecn" covers qos.ecn.np_priorities and .rp_priorities, "qos.dcqcn" every parameter.
    if (field == row.field || (field.size() > row.field.size() && field.substr(0, row.field.size()) == row.field &&
                               field[row.field.size()] == '.')) {
      return Build(row, field, present);
    }
  }
  return FieldSurface{std::string(field), "", present, ""};
}

std::vector<FieldSurface> FieldSurfaces(const DriverProfile& profile, const std::vector<std::string>& present) {
  std::vector<FieldSurface> out;
  for (const SurfaceRow& row : TableOf(profile)) {
    bool here = false;
    for (const std::string& p : present) here |= p == row.field;
    out.push_back(Build(row, row.field, here));
  }
  return out;
}

}  // namespace roced::hal

// The DCQCN parameters qos.dcqcn manages, the one place their names and
// ranges are written: validation checks each against its range, the field
// table makes one managed field per entry (in this order), and the HAL finds
// the node's file by the name. Names and ranges are MLNX_OFED's
// (/sys/class/net/<netdev>/ecn/roce_np|roce_rp/<name>); the upstream mlx5
// debugfs cc_params carry the same parameters under other names, which
// hal/congestion_files maps.
#pragma once

#include <array>
#include <cstdint>

namespace roced::model {

struct DcqcnParam {
  const char* name;  // the DcqcnConfig field and the MLNX_OFED file name
  bool notification_point;  // roce_np (else roce_rp)
  uint32_t min;
  uint32_t max;
};

inline constexpr std::array<DcqcnParam, 19> kDcqcnParams = {{
    {"cnp_dscp", true, 0, 63},
    {"cnp_802p_prio", true, 0, 7},
    {"min_time_between_cnps", true, 0, 4095},
    {"rpg_time_reset", false, 0, 131071},
    {"rpg_byte_reset", false, 0, 32767},
    {"rpg_threshold", false, 1, 31},
    {"rpg_max_rate", false, 0, 400000},
    {"rpg_ai_rate", false, 1, 400000},
    {"rpg_hai_rate", false, 1, 400000},
    {"rpg_gd", false, 0, 15},
    {"rpg_min_dec_fac", false, 1, 100},
    {"rpg_min_rate", false, 0, 400000},
    {"rate_to_set_on_first_cnp", false, 0, 400000},
    {"dce_tcp_g", false, 0, 1023},
    {"dce_tcp_rtt", false, 0, 131071},
    {"rate_reduce_monitor_period", false, 0, 2147483647},
    {"initial_alpha_value", false, 0, 1023},
    {"clamp_tgt_rate", false, 0, 1},
    {"clamp_tgt_rate_after_time_inc", false, 0, 1},
}};

// qos.pfc_prevention: the kernel's PFC_STORM_PREVENTION_AUTO and _DISABLE
// (linux/ethtool.h), and the range mlx5 accepts besides those.
inline constexpr uint32_t kPfcPreventionAuto = 0xffff;
inline constexpr uint32_t kPfcPreventionMaxMs = 0xfffe;
inline constexpr uint32_t kMlx5PfcPreventionMinMs = 80;
inline constexpr uint32_t kMlx5PfcPreventionMaxMs = 8000;
// What mlx5 reads back after "auto" (MLX5E_PFC_PREVEN_AUTO_TOUT_MSEC).
inline constexpr uint32_t kMlx5PfcPreventionAutoMs = 100;

}  // namespace roced::model

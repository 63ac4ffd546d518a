// DCQCN parameters of a netdev's RoCE function (CNP DSCP and priority, the
// reaction point's rate parameters), from whichever of the two places the
// node's driver keeps them:
//   MLNX_OFED:      <sysfs>/class/net/<netdev>/ecn/roce_np|roce_rp/<name>
//   upstream mlx5:  <debugfs>/mlx5/<pci>/cc_params/<np_|rp_name>
// Names are MLNX_OFED's (model/dcqcn_params.h lists the managed ones); the
// debugfs name is derived from it (Mlx5DebugfsName). The MLNX_OFED file wins
// when both exist. A parameter neither has answers UNIMPLEMENTED (not
// NOT_FOUND), so callers tell "not on this node" from "gone".
//
// Upstream writes go through the firmware (a debugfs write of a value the
// firmware refuses fails with its error); writing np_cnp_prio also sets
// np_cnp_prio_mode to 0 (use the given priority), as mlx5_ib does.
//
// Stateless and thread-safe; it owns nothing but a copy of the roots.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "hal/ecn_files.h"
#include "hal/paths.h"

namespace roced::hal {

// "rpg_ai_rate" (reaction point) -> "rp_ai_rate", "cnp_802p_prio" ->
// "np_cnp_prio": the upstream mlx5 debugfs cc_params name.
std::string Mlx5DebugfsName(const std::string& name, EcnRole role);

class CongestionFiles {
 public:
  explicit CongestionFiles(Paths paths) : paths_(std::move(paths)) {}

  absl::StatusOr<uint64_t> Get(const std::string& netdev, EcnRole role, const std::string& name) const;
  absl::Status Set(const std::string& netdev, EcnRole role, const std::string& name, uint64_t value) const;

 private:
  // The file holding the parameter, or UNIMPLEMENTED naming both places.
  absl::StatusOr<std::string> Locate(const std::string& netdev, EcnRole role, const std::string& name) const;

  Paths paths_;
};

}  // namespace roced::hal

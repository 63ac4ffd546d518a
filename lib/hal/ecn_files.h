// Per-priority ECN enables, MLNX_OFED style:
//   <sysfs>/class/net/<dev>/ecn/roce_{np,rp}/enable/<prio>   ("0" / "1")
// Upstream mlx5 has no such files; a netdev without them answers
// UNIMPLEMENTED (not NOT_FOUND), so callers can tell "unsupported here" from
// "gone". Stateless and thread-safe; it owns nothing but a copy of the roots.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "hal/paths.h"

namespace roced::hal {

// The two ends of DCQCN: the notification point (receiver, sends CNPs) and
// the reaction point (sender, slows down on CNPs).
enum class EcnRole { kNotificationPoint, kReactionPoint };

class EcnFiles {
 public:
  explicit EcnFiles(Paths paths) : paths_(std::move(paths)) {}

  // Bit N set = ECN enabled on priority N.
  absl::StatusOr<uint8_t> Get(const std::string& netdev, EcnRole role) const;
  // Writes only the priorities whose state differs from `current`.
  absl::Status Set(const std::string& netdev, EcnRole role, uint8_t current, uint8_t wanted) const;

 private:
  std::string Dir(const std::string& netdev, EcnRole role) const;

  Paths paths_;
};

}  // namespace roced::hal

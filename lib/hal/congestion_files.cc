#include "hal/congestion_files.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "util/fs.h"

namespace roced::hal {

std::string Mlx5DebugfsName(const std::string& name, EcnRole role) {
  // The two whose debugfs names are not the MLNX_OFED name with a prefix
  // (drivers/infiniband/hw/mlx5/cong.c).
  if (name == "cnp_802p_prio") return "np_cnp_prio";
  if (name == "clamp_tgt_rate_after_time_inc") return "rp_clamp_tgt_rate_ati";
  const bool np = role == EcnRole::kNotificationPoint;
  return absl::StrCat(np ? "np_" : "rp_", absl::StripPrefix(name, np ? "" : "rpg_"));
}

absl::StatusOr<std::string> CongestionFiles::Locate(const std::string& netdev, EcnRole role,
                                                    const std::string& name) const {
  const std::string ofed = absl::StrCat(paths_.sysfs, "/class/net/", netdev, "/ecn/",
                                        role == EcnRole::kNotificationPoint ? "roce_np/" : "roce_rp/", name);
  if (util::PathExists(ofed)) return ofed;
  // Upstream: the debugfs directory of the netdev's PCI function.
  std::string upstream = "(no PCI device)";
  if (auto dev = util::ReadLink(absl::StrCat(paths_.sysfs, "/class/net/", netdev, "/device")); dev.ok()) {
    const size_t slash = dev->find_last_of('/');
    const std::string pci = slash == std::string::npos ? *dev : dev->substr(slash + 1);
    upstream = absl::StrCat(paths_.debugfs, "/mlx5/", pci, "/cc_params/", Mlx5DebugfsName(name, role));
    if (util::PathExists(upstream)) return upstream;
  }
  return absl::UnimplementedError(
      absl::StrCat(netdev, ": no DCQCN parameter ", name, " (neither ", ofed, " nor ", upstream, ")"));
}

absl::StatusOr<uint64_t> CongestionFiles::Get(const std::string& netdev, EcnRole role,
                                              const std::string& name) const {
  auto path = Locate(netdev, role, name);
  if (!path.ok()) return path.status();
  auto text = util::ReadFileTrimmed(*path);
  if (!text.ok()) return text.status();
  uint64_t v = 0;
  if (!absl::SimpleAtoi(*text, &v)) {
    return absl::DataLossError(absl::StrCat(*path, ": '", *text, "' is not a number"));
  }
  return v;
}

absl::Status CongestionFiles::Set(const std::string& netdev, EcnRole role, const std::string& name,
                                  uint64_t value) const {
  auto path = Locate(netdev, role, name);
  if (!path.ok()) return path.status();
  return util::WriteAttribute(*path, absl::StrCat(value));
}

}  // namespace roced::hal

#include "hal/ecn_files.h"

#include "absl/strings/str_cat.h"
#include "util/fs.h"

namespace roced::hal {

std::string EcnFiles::Dir(const std::string& netdev, EcnRole role) const {
  return absl::StrCat(paths_.sysfs, "/class/net/", netdev, "/ecn/",
                      role == EcnRole::kNotificationPoint ? "roce_np" : "roce_rp", "/enable");
}

absl::StatusOr<uint8_t> EcnFiles::Get(const std::string& netdev, EcnRole role) const {
  const std::string dir = Dir(netdev, role);
  if (!util::PathExists(dir)) {
    return absl::UnimplementedError(absl::StrCat(netdev, ": no per-priority ECN control (", dir,
                                                 " absent; upstream mlx5 has none)"));
  }
  uint8_t mask = 0;
  for (int prio = 0; prio < 8; ++prio) {
    auto v = util::ReadFileTrimmed(absl::StrCat(dir, "/", prio));
    if (!v.ok()) return v.status();
    if (*v == "1") mask |= static_cast<uint8_t>(1u << prio);
  }
  return mask;
}

absl::Status EcnFiles::Set(const std::string& netdev, EcnRole role, uint8_t current,
                           uint8_t wanted) const {
  const std::string dir = Dir(netdev, role);
  for (int prio = 0; prio < 8; ++prio) {
    // Compare the masked bits as integers. The earlier form
    // `bool want = wanted & bit; if (want == static_cast<bool>(current & bit))`
    // is miscompiled by GCC 12.2 at -O2 (tree-vrp): it skipped every 0->1
    // change, so ECN was never enabled on a real node.
    const unsigned bit = 1u << prio;
    if ((wanted & bit) == (current & bit)) continue;
    absl::Status s = util::WriteAttribute(absl::StrCat(dir, "/", prio), (wanted & bit) != 0 ? "1" : "0");
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace roced::hal

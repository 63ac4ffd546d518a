#include "hal/node_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "util/fs.h"
#include "util/log.h"

namespace roced::hal {

std::string NodeFiles::EcnPath(const std::string& netdev, EcnRole role) const {
  return absl::StrCat(paths_.sysfs, "/class/net/", netdev, "/ecn/",
                      role == EcnRole::kNotificationPoint ? "roce_np" : "roce_rp", "/enable");
}

absl::StatusOr<uint8_t> NodeFiles::GetEcn(const std::string& netdev, EcnRole role) const {
  const std::string dir = EcnPath(netdev, role);
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

absl::Status NodeFiles::SetEcn(const std::string& netdev, EcnRole role, uint8_t current,
                               uint8_t wanted) const {
  const std::string dir = EcnPath(netdev, role);
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

absl::StatusOr<std::string> NodeFiles::RdmaCmPortDir(const std::string& ibdev, uint32_t port,
                                                     bool create) const {
  const std::string root = absl::StrCat(paths_.configfs, "/rdma_cm");
  if (!util::PathExists(root)) {
    return absl::UnimplementedError(
        absl::StrCat(root, " absent: configfs not mounted or rdma_cm not loaded"));
  }
  const std::string dev = absl::StrCat(root, "/", ibdev);
  if (!util::PathExists(dev)) {
    if (!create) return absl::NotFoundError(absl::StrCat(dev, " not created yet"));
    if (::mkdir(dev.c_str(), 0755) != 0 && errno != EEXIST) {
      return util::ErrnoToStatus(errno, absl::StrCat("mkdir ", dev));
    }
  }
  return absl::StrCat(dev, "/ports/", port);
}

absl::StatusOr<std::string> NodeFiles::ReadRdmaCm(const std::string& ibdev, uint32_t port,
                                                   const std::string& file) const {
  // The device's group exists only once someone mkdirs it; a read must not
  // leave one behind (an agent in observe mode changes nothing). The values
  // live in the kernel's cma_device, not in the group, so removing the group
  // again loses nothing.
  const std::string dev = absl::StrCat(paths_.configfs, "/rdma_cm/", ibdev);
  const bool existed = util::PathExists(dev);
  auto dir = RdmaCmPortDir(ibdev, port, /*create=*/true);
  if (!dir.ok()) return dir.status();
  auto text = util::ReadFileTrimmed(absl::StrCat(*dir, "/", file));
  if (!existed && ::rmdir(dev.c_str()) != 0 && errno != ENOENT) {
    LOG_DEBUG << "rmdir " << dev << ": " << std::strerror(errno);
  }
  return text;
}

absl::StatusOr<std::string> NodeFiles::GetRoceMode(const std::string& ibdev, uint32_t port) const {
  return ReadRdmaCm(ibdev, port, "default_roce_mode");
}

absl::Status NodeFiles::SetRoceMode(const std::string& ibdev, uint32_t port,
                                    const std::string& mode) const {
  auto dir = RdmaCmPortDir(ibdev, port, /*create=*/true);
  if (!dir.ok()) return dir.status();
  return util::WriteAttribute(*dir + "/default_roce_mode", mode);
}

absl::StatusOr<uint32_t> NodeFiles::GetRoceTos(const std::string& ibdev, uint32_t port) const {
  auto text = ReadRdmaCm(ibdev, port, "default_roce_tos");
  if (!text.ok()) return text.status();
  uint32_t tos;
  if (!absl::SimpleAtoi(*text, &tos)) {
    return absl::InternalError(absl::StrCat(ibdev, " port ", port, " default_roce_tos: unexpected '", *text, "'"));
  }
  return tos;
}

absl::Status NodeFiles::SetRoceTos(const std::string& ibdev, uint32_t port, uint32_t tos) const {
  auto dir = RdmaCmPortDir(ibdev, port, /*create=*/true);
  if (!dir.ok()) return dir.status();
  return util::WriteAttribute(*dir + "/default_roce_tos", absl::StrCat(tos));
}

std::string NodeFiles::HugepagePath(uint64_t size_kb, int32_t numa_node) const {
  if (numa_node < 0) {
    return absl::StrCat(paths_.sysfs, "/kernel/mm/hugepages/hugepages-", size_kb, "kB/nr_hugepages");
  }
  return absl::StrCat(paths_.sysfs, "/devices/system/node/node", numa_node, "/hugepages/hugepages-",
                      size_kb, "kB/nr_hugepages");
}

absl::StatusOr<uint64_t> NodeFiles::GetHugepages(uint64_t size_kb, int32_t numa_node) const {
  const std::string path = HugepagePath(size_kb, numa_node);
  auto text = util::ReadFileTrimmed(path);
  if (!text.ok()) {
    if (absl::IsNotFound(text.status())) {
      return absl::UnimplementedError(absl::StrCat(
          path, " absent: ", size_kb, " kB pages", numa_node >= 0 ? absl::StrCat(" on NUMA node ", numa_node) : "",
          " not supported here"));
    }
    return text.status();
  }
  uint64_t n;
  if (!absl::SimpleAtoi(*text, &n)) return absl::InternalError(absl::StrCat(path, ": unexpected '", *text, "'"));
  return n;
}

absl::Status NodeFiles::SetHugepages(uint64_t size_kb, int32_t numa_node, uint64_t count) const {
  return util::WriteAttribute(HugepagePath(size_kb, numa_node), absl::StrCat(count));
}

}  // namespace roced::hal

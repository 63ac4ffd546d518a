#include "hal/rdma_cm.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "util/fs.h"
#include "util/log.h"

namespace roced::hal {

absl::StatusOr<std::string> RdmaCm::PortDir(const std::string& ibdev, uint32_t port, bool create) const {
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

absl::StatusOr<std::string> RdmaCm::Read(const std::string& ibdev, uint32_t port,
                                         const std::string& file) const {
  // The device's group exists only once someone mkdirs it; a read must not
  // leave one behind (an agent in observe mode changes nothing). The values
  // live in the kernel's cma_device, not in the group, so removing the group
  // again loses nothing.
  const std::string dev = absl::StrCat(paths_.configfs, "/rdma_cm/", ibdev);
  const bool existed = util::PathExists(dev);
  auto dir = PortDir(ibdev, port, /*create=*/true);
  if (!dir.ok()) return dir.status();
  auto text = util::ReadFileTrimmed(absl::StrCat(*dir, "/", file));
  if (!existed && ::rmdir(dev.c_str()) != 0 && errno != ENOENT) {
    LOG_DEBUG << "rmdir " << dev << ": " << std::strerror(errno);
  }
  return text;
}

absl::StatusOr<std::string> RdmaCm::GetRoceMode(const std::string& ibdev, uint32_t port) const {
  return Read(ibdev, port, "default_roce_mode");
}

absl::Status RdmaCm::SetRoceMode(const std::string& ibdev, uint32_t port, const std::string& mode) const {
  auto dir = PortDir(ibdev, port, /*create=*/true);
  if (!dir.ok()) return dir.status();
  return util::WriteAttribute(*dir + "/default_roce_mode", mode);
}

absl::StatusOr<uint32_t> RdmaCm::GetRoceTos(const std::string& ibdev, uint32_t port) const {
  auto text = Read(ibdev, port, "default_roce_tos");
  if (!text.ok()) return text.status();
  uint32_t tos;
  if (!absl::SimpleAtoi(*text, &tos)) {
    return absl::InternalError(absl::StrCat(ibdev, " port ", port, " default_roce_tos: unexpected '", *text, "'"));
  }
  return tos;
}

absl::Status RdmaCm::SetRoceTos(const std::string& ibdev, uint32_t port, uint32_t tos) const {
  auto dir = PortDir(ibdev, port, /*create=*/true);
  if (!dir.ok()) return dir.status();
  return util::WriteAttribute(*dir + "/default_roce_tos", absl::StrCat(tos));
}

}  // namespace roced::hal

// The rdma_cm defaults for connections made from now on, per RDMA port:
//   <configfs>/rdma_cm/<ibdev>/ports/<port>/default_roce_{mode,tos}
// configfs exposes a device's group only once someone mkdirs it. Setters
// create the group and keep it; a read on a device whose group did not exist
// removes the group it had to make (an agent in observe mode changes
// nothing). No configfs or no rdma_cm module answers UNIMPLEMENTED.
// Stateless and thread-safe; it owns nothing but a copy of the roots.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "hal/paths.h"

namespace roced::hal {

class RdmaCm {
 public:
  explicit RdmaCm(Paths paths) : paths_(std::move(paths)) {}

  // "RoCE v2" / "IB/RoCE v1", as the kernel words it.
  absl::StatusOr<std::string> GetRoceMode(const std::string& ibdev, uint32_t port) const;
  absl::Status SetRoceMode(const std::string& ibdev, uint32_t port, const std::string& mode) const;
  absl::StatusOr<uint32_t> GetRoceTos(const std::string& ibdev, uint32_t port) const;
  absl::Status SetRoceTos(const std::string& ibdev, uint32_t port, uint32_t tos) const;

 private:
  absl::StatusOr<std::string> PortDir(const std::string& ibdev, uint32_t port, bool create) const;
  absl::StatusOr<std::string> Read(const std::string& ibdev, uint32_t port, const std::string& file) const;

  Paths paths_;
};

}  // namespace roced::hal

// The file-based kernel surfaces the reconciler writes, each under its
// configurable root:
//  - ECN enables, MLNX_OFED style: <sysfs>/class/net/<dev>/ecn/roce_{np,rp}/enable/<prio>
//  - rdma_cm defaults: <configfs>/rdma_cm/<ibdev>/ports/<port>/default_roce_{mode,tos}
//  - hugepage pools: <sysfs>/kernel/mm/hugepages/hugepages-<kB>kB/nr_hugepages and
//    <sysfs>/devices/system/node/node<N>/hugepages/hugepages-<kB>kB/nr_hugepages
// Stateless and thread-safe. A surface the node lacks answers UNIMPLEMENTED
// (not NOT_FOUND) so callers can tell "unsupported here" from "gone".
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "hal/paths.h"

namespace roced::hal {

enum class EcnRole { kNotificationPoint, kReactionPoint };

class NodeFiles {
 public:
  explicit NodeFiles(Paths paths) : paths_(std::move(paths)) {}

  // Bit N set = ECN enabled on priority N.
  absl::StatusOr<uint8_t> GetEcn(const std::string& netdev, EcnRole role) const;
  // Writes only the priorities whose state differs from `current`.
  absl::Status SetEcn(const std::string& netdev, EcnRole role, uint8_t current, uint8_t wanted) const;

  // "RoCE v2" / "IB/RoCE v1" as the kernel words it. Reading needs the
  // device's rdma_cm configfs group (mkdir is how configfs exposes it); a
  // group made only to read is removed again. Setters create it and keep it.
  absl::StatusOr<std::string> GetRoceMode(const std::string& ibdev, uint32_t port) const;
  absl::Status SetRoceMode(const std::string& ibdev, uint32_t port, const std::string& mode) const;
  absl::StatusOr<uint32_t> GetRoceTos(const std::string& ibdev, uint32_t port) const;
  absl::Status SetRoceTos(const std::string& ibdev, uint32_t port, uint32_t tos) const;

  // numa_node < 0: the node-wide pool.
  absl::StatusOr<uint64_t> GetHugepages(uint64_t size_kb, int32_t numa_node) const;
  absl::Status SetHugepages(uint64_t size_kb, int32_t numa_node, uint64_t count) const;

 private:
  std::string EcnPath(const std::string& netdev, EcnRole role) const;
  absl::StatusOr<std::string> RdmaCmPortDir(const std::string& ibdev, uint32_t port, bool create) const;
  absl::StatusOr<std::string> ReadRdmaCm(const std::string& ibdev, uint32_t port, const std::string& file) const;
  std::string HugepagePath(uint64_t size_kb, int32_t numa_node) const;

  Paths paths_;
};

}  // namespace roced::hal

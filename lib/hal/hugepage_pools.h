// Hugepage pools, the one reader and writer of their sysfs files:
//   node-wide:     <sysfs>/kernel/mm/hugepages/hugepages-<kB>kB/nr_hugepages
//   per NUMA node: <sysfs>/devices/system/node/node<N>/hugepages/hugepages-<kB>kB/nr_hugepages
// The reconciler reads and sets single pools; diagnosis lists the node-wide
// ones. A pool the kernel does not offer answers UNIMPLEMENTED (not
// NOT_FOUND). Stateless and thread-safe; it owns nothing but a copy of the
// roots.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hal/paths.h"

namespace roced::hal {

class HugepagePools {
 public:
  explicit HugepagePools(Paths paths) : paths_(std::move(paths)) {}

  // Pages in one pool; numa_node < 0: the node-wide pool.
  absl::StatusOr<uint64_t> Get(uint64_t size_kb, int32_t numa_node) const;
  // Asks the kernel for `count` pages; it may reserve fewer (read back to
  // see how many).
  absl::Status Set(uint64_t size_kb, int32_t numa_node, uint64_t count) const;

  // Every node-wide pool the kernel offers: page size (kB) -> pages
  // reserved. Empty when the node has no hugepage support; a pool whose
  // count cannot be read is left out.
  std::map<uint64_t, uint64_t> NodeWide() const;
  // The same per NUMA node: node -> page size (kB) -> pages reserved there.
  // Empty without NUMA topology in sysfs.
  std::map<int32_t, std::map<uint64_t, uint64_t>> PerNumaNode() const;

 private:
  std::string NodeWideRoot() const;
  std::string CountPath(uint64_t size_kb, int32_t numa_node) const;

  Paths paths_;
};

// MemTotal of a /proc/meminfo text, in bytes; nullopt when absent.
std::optional<uint64_t> ParseMemTotalBytes(absl::string_view meminfo);
// The node's memory (MemTotal of <procfs>/meminfo), in bytes.
absl::StatusOr<uint64_t> MemTotalBytes(const Paths& paths);

// The page size (kB) of a pool directory's name ("hugepages-2048kB" ->
// 2048); nullopt for any other name.
std::optional<uint64_t> ParseHugepageDirName(absl::string_view name);

}  // namespace roced::hal

#include "hal/hugepage_pools.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "hal/numa_locality.h"
#include "util/fs.h"

namespace roced::hal {

std::optional<uint64_t> ParseHugepageDirName(absl::string_view name) {
  uint64_t kb = 0;
  if (!absl::ConsumePrefix(&name, "hugepages-") || !absl::ConsumeSuffix(&name, "kB") ||
      !absl::SimpleAtoi(name, &kb)) {
    return std::nullopt;
  }
  return kb;
}

std::string HugepagePools::NodeWideRoot() const { return absl::StrCat(paths_.sysfs, "/kernel/mm/hugepages"); }

std::string HugepagePools::CountPath(uint64_t size_kb, int32_t numa_node) const {
  if (numa_node < 0) return absl::StrCat(NodeWideRoot(), "/hugepages-", size_kb, "kB/nr_hugepages");
  return absl::StrCat(paths_.sysfs, "/devices/system/node/node", numa_node, "/hugepages/hugepages-",
                      size_kb, "kB/nr_hugepages");
}

absl::StatusOr<uint64_t> HugepagePools::Get(uint64_t size_kb, int32_t numa_node) const {
  const std::string path = CountPath(size_kb, numa_node);
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

absl::Status HugepagePools::Set(uint64_t size_kb, int32_t numa_node, uint64_t count) const {
  return util::WriteAttribute(CountPath(size_kb, numa_node), absl::StrCat(count));
}

std::map<uint64_t, uint64_t> HugepagePools::NodeWide() const {
  std::map<uint64_t, uint64_t> pools;
  auto names = util::ListDir(NodeWideRoot());
  if (!names.ok()) return pools;
  for (const std::string& name : *names) {
    std::optional<uint64_t> kb = ParseHugepageDirName(name);
    if (!kb) continue;
    if (auto pages = Get(*kb, -1); pages.ok()) pools[*kb] = *pages;
  }
  return pools;
}

std::map<int32_t, std::map<uint64_t, uint64_t>> HugepagePools::PerNumaNode() const {
  std::map<int32_t, std::map<uint64_t, uint64_t>> nodes;
  for (const auto& [node, dir] : NumaNodeDirs(paths_)) {
    auto pools = util::ListDir(dir + "/hugepages");
    if (!pools.ok()) continue;
    for (const std::string& pool : *pools) {
      std::optional<uint64_t> kb = ParseHugepageDirName(pool);
      if (!kb) continue;
      if (auto pages = Get(*kb, node); pages.ok()) nodes[node][*kb] = *pages;
    }
  }
  return nodes;
}

std::optional<uint64_t> ParseMemTotalBytes(absl::string_view meminfo) {
  for (absl::string_view line : absl::StrSplit(meminfo, '\n')) {
    if (!absl::ConsumePrefix(&line, "MemTotal:")) continue;
    line = absl::StripAsciiWhitespace(line);
    if (!absl::ConsumeSuffix(&line, "kB")) return std::nullopt;
    uint64_t kb = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &kb) || kb > (UINT64_MAX >> 10)) return std::nullopt;
    return kb << 10;
  }
  return std::nullopt;
}

absl::StatusOr<uint64_t> MemTotalBytes(const Paths& paths) {
  const std::string path = paths.procfs + "/meminfo";
  absl::StatusOr<std::string> text = util::ReadFile(path);
  if (!text.ok()) return text.status();
  std::optional<uint64_t> bytes = ParseMemTotalBytes(*text);
  if (!bytes) return absl::DataLossError(absl::StrCat(path, ": no MemTotal line"));
  return *bytes;
}

}  // namespace roced::hal

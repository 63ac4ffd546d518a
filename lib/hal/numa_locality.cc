#include "hal/numa_locality.h"

#include <sched.h>

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "util/fs.h"

namespace roced::hal {

namespace {
constexpr uint32_t kMaxCpus = 65536;

// "3" or "0-7" into `out`; false when malformed.
bool AddRange(absl::string_view part, CpuSet* out) {
  std::vector<absl::string_view> ends = absl::StrSplit(part, absl::MaxSplits('-', 1));
  uint32_t lo = 0;
  uint32_t hi = 0;
  if (!absl::SimpleAtoi(ends[0], &lo)) return false;
  hi = lo;
  if (ends.size() == 2 && !absl::SimpleAtoi(ends[1], &hi)) return false;
  if (hi < lo || hi >= kMaxCpus) return false;
  for (uint32_t c = lo; c <= hi; ++c) out->insert(c);
  return true;
}
}  // namespace

std::optional<CpuSet> ParseCpuList(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  CpuSet cpus;
  if (text.empty()) return cpus;  // a memory-only node has no CPUs
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    if (!AddRange(part, &cpus)) return std::nullopt;
  }
  return cpus;
}

std::string FormatCpuList(const CpuSet& cpus) {
  std::vector<std::string> parts;
  for (auto it = cpus.begin(); it != cpus.end();) {
    const uint32_t lo = *it;
    uint32_t hi = lo;
    for (++it; it != cpus.end() && *it == hi + 1; ++it) hi = *it;
    parts.push_back(lo == hi ? absl::StrCat(lo) : absl::StrCat(lo, "-", hi));
  }
  return absl::StrJoin(parts, ",");
}

std::optional<int32_t> ParseNumaNodeDirName(absl::string_view name) {
  int32_t id = 0;
  if (!absl::ConsumePrefix(&name, "node") || !absl::SimpleAtoi(name, &id) || id < 0) return std::nullopt;
  return id;
}

std::map<int32_t, std::string> NumaNodeDirs(const Paths& paths) {
  std::map<int32_t, std::string> dirs;
  const std::string root = paths.sysfs + "/devices/system/node";
  auto names = util::ListDir(root);
  if (!names.ok()) return dirs;
  for (const std::string& name : *names) {
    if (std::optional<int32_t> id = ParseNumaNodeDirName(name)) dirs[*id] = absl::StrCat(root, "/", name);
  }
  return dirs;
}

std::map<int32_t, CpuSet> NumaNodeCpus(const Paths& paths) {
  std::map<int32_t, CpuSet> nodes;
  for (const auto& [id, dir] : NumaNodeDirs(paths)) {
    auto text = util::ReadFile(dir + "/cpulist");
    if (!text.ok()) continue;
    if (std::optional<CpuSet> cpus = ParseCpuList(*text)) nodes[id] = *std::move(cpus);
  }
  return nodes;
}

CpuSet AllowedCpus() {
  CpuSet cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (uint32_t c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.insert(c);
  }
  return cpus;
}

std::map<uint32_t, CpuSet> DeviceIrqAffinity(const Paths& paths, const std::string& rdma_device) {
  std::map<uint32_t, CpuSet> irqs;
  auto names = util::ListDir(absl::StrCat(paths.sysfs, "/class/infiniband/", rdma_device, "/device/msi_irqs"));
  if (!names.ok()) return irqs;
  for (const std::string& name : *names) {
    uint32_t irq = 0;
    if (!absl::SimpleAtoi(name, &irq)) continue;
    auto text = util::ReadFile(absl::StrCat(paths.procfs, "/irq/", irq, "/smp_affinity_list"));
    if (!text.ok()) continue;
    if (std::optional<CpuSet> cpus = ParseCpuList(*text)) irqs[irq] = *std::move(cpus);
  }
  return irqs;
}

}  // namespace roced::hal

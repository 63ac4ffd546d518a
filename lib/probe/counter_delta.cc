#include "probe/counter_delta.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "util/fs.h"

namespace roced::probe {

CounterSnapshot ReadPortCounters(const std::string& sysfs_root, const std::string& device,
                                 uint32_t port) {
  CounterSnapshot out;
  const std::string base =
      absl::StrCat(sysfs_root, "/class/infiniband/", device, "/ports/", port, "/");
  for (const char* dir : {"hw_counters", "counters"}) {
    auto names = util::ListDir(base + dir);
    if (!names.ok()) continue;
    const std::string prefix = std::string(dir) == "counters" ? "counters/" : "";
    for (const std::string& name : *names) {
      if (name == "lifespan") continue;
      auto text = util::ReadFileTrimmed(base + dir + "/" + name);
      uint64_t value = 0;
      if (text.ok() && absl::SimpleAtoi(*text, &value)) out[prefix + name] = value;
    }
  }
  return out;
}

std::vector<roced::v1::CounterDelta> CounterDeltas(const CounterSnapshot& before,
                                                   const CounterSnapshot& after) {
  std::vector<roced::v1::CounterDelta> out;
  for (const auto& [name, value] : after) {
    auto it = before.find(name);
    if (it == before.end() || value <= it->second) continue;
    roced::v1::CounterDelta d;
    d.set_name(name);
    d.set_delta(value - it->second);
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace roced::probe

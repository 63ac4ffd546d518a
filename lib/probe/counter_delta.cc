#include "probe/counter_delta.h"

#include "absl/strings/str_cat.h"
#include "hal/counter_files.h"

namespace roced::probe {

CounterSnapshot ReadPortCounters(const std::string& sysfs_root, const std::string& device,
                                 uint32_t port) {
  CounterSnapshot out;
  hal::Paths paths;
  paths.sysfs = sysfs_root;
  for (const hal::PortCounterSet& set : hal::ReadPortCounterSets(paths, device, port)) {
    const std::string prefix = set.source == hal::CounterSource::kCounters ? "counters/" : "";
    for (const hal::CounterValue& c : set.values) out[prefix + c.name] = c.value;
  }
  return out;
}

absl::StatusOr<CounterSnapshot> PeerCounterSnapshot(const roced::v1::GetCountersResponse& response,
                                                    const std::string& device) {
  CounterSnapshot out;
  for (const auto& set : response.sets()) {
    if (set.device() != device) continue;
    if (set.source() != "hw_counters" && set.source() != "counters") continue;
    const std::string prefix = set.source() == "counters" ? "counters/" : "";
    for (const auto& c : set.counters()) {
      out[prefix + (c.source_name().empty() ? c.name() : c.source_name())] = c.value();
    }
  }
  if (out.empty()) {
    return absl::NotFoundError(absl::StrCat("GetCounters: no RDMA counters for ", device));
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

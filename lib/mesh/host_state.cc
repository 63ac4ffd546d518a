#include "mesh/host_state.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "mesh/slowdown.h"

namespace roced::mesh {

std::string HostBusyReason(const HostState& state) {
  std::vector<std::string> reasons;
  if (state.cpu_pressure.has_value() && *state.cpu_pressure >= kPressureHigh) {
    reasons.push_back(absl::StrFormat("CPU pressure %.0f%% (some avg10)", *state.cpu_pressure));
  }
  if (state.max_loop_lag >= kHostStallLag) {
    reasons.push_back(absl::StrFormat("mesh loop stalled %.1f s", absl::ToDoubleSeconds(state.max_loop_lag)));
  }
  if (state.uptime < state.window) {
    reasons.push_back(absl::StrFormat("agent started %d s ago, within the %d s window",
                                      absl::ToInt64Seconds(std::max(state.uptime, absl::ZeroDuration())),
                                      absl::ToInt64Seconds(state.window)));
  }
  return absl::StrJoin(reasons, "; ");
}

WindowMax::WindowMax(absl::Duration window, uint32_t slots) {
  slots = std::clamp<uint32_t>(slots, 1, 60);
  slot_ns_ = std::max<int64_t>(absl::ToInt64Nanoseconds(std::max(window, absl::Milliseconds(1)) / slots), 1);
  slots_.assign(slots, {-1, absl::ZeroDuration()});
}

void WindowMax::Record(int64_t now_ns, absl::Duration value) {
  const int64_t epoch = std::max<int64_t>(now_ns, 0) / slot_ns_;
  auto& [slot_epoch, largest] = slots_[static_cast<size_t>(epoch % static_cast<int64_t>(slots_.size()))];
  if (epoch < slot_epoch) return;
  if (epoch > slot_epoch) {
    slot_epoch = epoch;
    largest = absl::ZeroDuration();
  }
  largest = std::max(largest, value);
}

absl::Duration WindowMax::Max(int64_t now_ns) const {
  const int64_t now_epoch = std::max<int64_t>(now_ns, 0) / slot_ns_;
  absl::Duration out = absl::ZeroDuration();
  for (const auto& [epoch, largest] : slots_) {
    if (epoch >= 0 && epoch <= now_epoch && epoch > now_epoch - static_cast<int64_t>(slots_.size())) {
      out = std::max(out, largest);
    }
  }
  return out;
}

}  // namespace roced::mesh

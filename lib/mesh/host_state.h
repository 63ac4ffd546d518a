// This host's own state over the mesh window, as its agent sees it: what
// makes the probes it sent and answered say more about the host than about
// its RNIC or the network. The CPU starved (PSI "some avg10" at or over
// kPressureHigh, the pressure the mesh slows down at), the agent's mesh
// loop stalled (woken kHostStallLag or more after it meant to), or the
// agent younger than the window (its first probes went out while it was
// starting). ListMeshResults reports the reason; `rocectl mesh` marks the
// host with it (Observations::MarkHost), so a finding there is of kind
// "host", not "rnic".
//
// Pure: the caller reads the clock and /proc and passes them in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace roced::mesh {

// The mesh loop's lateness that makes a host busy.
inline constexpr absl::Duration kHostStallLag = absl::Seconds(1);

struct HostState {
  std::optional<double> cpu_pressure;  // PSI "some avg10", percent; nullopt: unknown
  absl::Duration max_loop_lag;         // the mesh loop's largest lateness over the window
  absl::Duration uptime;               // since the agent's mesh started
  absl::Duration window;               // the mesh window
};

// Each reason that holds, "; "-joined; empty when none does:
//   "CPU pressure 73% (some avg10)"
//   "mesh loop stalled 4.2 s"
//   "agent started 12 s ago, within the 60 s window"
std::string HostBusyReason(const HostState& state);

// The largest duration recorded over a sliding window, in a ring of slots
// (a value counts in the slot of when it was recorded, and leaves with
// it). Fixed memory. Not thread-safe.
class WindowMax {
 public:
  // `window` at least 1 ms, `slots` 1 to 60 (clamped into range).
  WindowMax(absl::Duration window, uint32_t slots);
  void Record(int64_t now_ns, absl::Duration value);
  // Zero when nothing was recorded in the window ending at now_ns.
  absl::Duration Max(int64_t now_ns) const;

 private:
  int64_t slot_ns_ = 1;
  std::vector<std::pair<int64_t, absl::Duration>> slots_;  // (epoch, largest), indexed by epoch % size
};

}  // namespace roced::mesh

// RDMA counter deltas over a probe: the port's counters/ and hw_counters/
// files read before and after, and the ones that moved (retransmits,
// out-of-sequence, sequence errors, CNPs, ... whatever the driver has).
// Local counters are read by hal's counter reader (hal/counter_files.h),
// the one that also serves metrics and GetCounters; the peer's come from its
// GetCounters.
//
// All functions are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "roced/v1/agent.pb.h"

namespace roced::probe {

// name -> value; hw_counters keep their file name, PMA counters are
// prefixed "counters/" (port_xmit_data and friends).
using CounterSnapshot = std::map<std::string, uint64_t>;

// Reads <sysfs>/class/infiniband/<device>/ports/<port>/{hw_counters,counters}
// through hal::ReadPortCounterSets. Missing directories or unreadable files
// are left out (rxe has no counters/; a snapshot may be empty).
// hw_counters/lifespan is a setting and skipped.
CounterSnapshot ReadPortCounters(const std::string& sysfs_root, const std::string& device,
                                 uint32_t port);

// The peer's snapshot of `device` from its GetCounters answer (the same
// names as ReadPortCounters gives: a counter's source_name, else its name;
// counters/ prefixed). NOT_FOUND "GetCounters: no RDMA counters for <device>"
// when the answer has none.
absl::StatusOr<CounterSnapshot> PeerCounterSnapshot(const roced::v1::GetCountersResponse& response,
                                                    const std::string& device);

// The counters present in both snapshots whose value grew, by name. A
// counter that went down (reset, wrapped) is left out.
std::vector<roced::v1::CounterDelta> CounterDeltas(const CounterSnapshot& before,
                                                   const CounterSnapshot& after);

}  // namespace roced::probe

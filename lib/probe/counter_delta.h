// RDMA counter deltas over a probe: the port's counters/ and hw_counters/
// files read before and after, and the ones that moved (retransmits,
// out-of-sequence, sequence errors, CNPs, ... whatever the driver has).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "roced/v1/agent.pb.h"

namespace roced::probe {

// name -> value; hw_counters keep their file name, PMA counters are
// prefixed "counters/" (port_xmit_data and friends).
using CounterSnapshot = std::map<std::string, uint64_t>;

// Reads <sysfs>/class/infiniband/<device>/ports/<port>/{hw_counters,counters}.
// Missing directories or unreadable files are left out (rxe has no
// counters/; a snapshot may be empty). hw_counters/lifespan is a setting
// and skipped. Thread-safe.
CounterSnapshot ReadPortCounters(const std::string& sysfs_root, const std::string& device,
                                 uint32_t port);

// The counters present in both snapshots whose value grew, by name. A
// counter that went down (reset, wrapped) is left out.
std::vector<roced::v1::CounterDelta> CounterDeltas(const CounterSnapshot& before,
                                                   const CounterSnapshot& after);

}  // namespace roced::probe

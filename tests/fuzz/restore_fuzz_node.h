// Runs the agent's restore path over values read from the state directory
// (accepted.json's priors, the apply journal): RestoreQueue::Run, that is reconcile::RestorePlan (the journal codecs, the field table) and
// ApplyPlan (write, read back, roll back). The node is the unit tests' fake
// (tests/unit/fake_node_io_for_test.h), because the values come from the
// input and must not reach this machine's kernel; every object the values
// name exists on it with settings that differ from most of them, so the
// writes are planned and made.
#pragma once

#include <vector>

#include "agent/core/restore_queue.h"
#include "agent/core/state_dir.h"
#include "fake_node_io_for_test.h"

namespace roced::fuzz {

inline reconcile::InterfaceObserved SomeInterface() {
  reconcile::InterfaceObserved o;
  o.mtu = 1500;
  o.dscp = reconcile::DscpMap{{0, 0}};
  o.ets = reconcile::Ets{};
  o.pfc = reconcile::Pfc{0, 0};
  o.ecn_np = 0;
  o.ecn_rp = 0;
  o.roce_mode = roced::v1::ROCE_MODE_V1;
  o.roce_tos = 0;
  return o;
}

// Runs what `queue` has pending (its values are `prior`) on a fake node
// holding every object `prior` names.
inline void RunRestore(agent::RestoreQueue* queue, const std::vector<roced::v1::PriorValue>& prior) {
  reconcile::FakeNodeIoForTest io;
  for (const auto& p : prior) {
    if (!p.netdev().empty()) io.interfaces.try_emplace(p.netdev(), SomeInterface());
    io.hugepages.try_emplace(reconcile::HugepagePool{p.hugepage_size_kb(), p.numa_node()}, 0);
  }
  (void)queue->Run("fuzz", &io);
}

}  // namespace roced::fuzz

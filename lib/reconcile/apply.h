// Applying a plan: write each step in order, read it back until it verifies
// (bounded retries), and on the first step that fails or does not verify,
// roll back every step of this apply, newest first, to the values observed
// before it. The node then is as it was, and the result says per step what
// happened.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "reconcile/state.h"
#include "roced/v1/agent.pb.h"

namespace roced::reconcile {

// The reconciler's only door to the node. The Linux implementation is
// LinuxNodeIo; tests of the apply logic use FakeNodeIoForTest. Calls come
// from one thread at a time (the reconcile loop).
class NodeIo {
 public:
  virtual ~NodeIo() = default;
  virtual InterfaceObserved ObserveInterface(const Target& target) = 0;
  // nullopt when the pool does not exist on this node.
  virtual std::optional<uint64_t> ObserveHugepages(const HugepagePool& pool) = 0;
  // Moves one field from `from` to `to` (both of the step's value type).
  virtual absl::Status Write(const Target* target, const Step& step, const Value& from,
                             const Value& to) = 0;
};

// Observes everything `config` manages.
Observed ObserveAll(NodeIo* io, const roced::v1::NodeConfig& config,
                    const std::vector<Target>& targets);

struct ApplyOptions {
  // Read-back attempts after a write, and the pause between them: drivers
  // apply some settings asynchronously.
  int verify_attempts = 5;
  absl::Duration verify_interval = absl::Milliseconds(40);
};

// Executes `plan`. Hugepage steps that the kernel satisfies only in part are
// PARTIAL (wanted and reserved counts in the error) and do not trigger a
// rollback: the memory is simply not there, and retrying will not make it so.
// When a later step fails, a PARTIAL step is rolled back with the others
// (the pages it did reserve are given back) and reported ROLLED_BACK.
roced::v1::ApplyResult ApplyPlan(const Plan& plan, const std::vector<Target>& targets, NodeIo* io,
                                 const ApplyOptions& options = {});

// Reads the field a step manages from an observation.
Value ObservedValue(const Step& step, const InterfaceObserved* iface,
                    const std::optional<uint64_t>& hugepages);

}  // namespace roced::reconcile

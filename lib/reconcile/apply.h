// Applying a plan: write each step in order, read it back until it verifies
// (bounded retries), and on the first step that fails or does not verify,
// roll back every step of this apply, newest first, to the values observed
// before it. The node then is as it was, and the result says per step what
// happened.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hal/ecn_files.h"
#include "reconcile/state.h"
#include "roced/v1/agent.pb.h"

namespace roced::reconcile {

// The reconciler's only door to the node: one read per object and one typed
// setter per kernel control. The Linux implementation is LinuxNodeIo; tests
// of the apply logic use FakeNodeIoForTest. Calls come from one thread at a
// time (the reconcile loop, or the agent's apply under its reconcile lock);
// implementations need no locking of their own for that. Which setter a
// field goes through is decided in one place, the field table (fields.h).
class NodeIo {
 public:
  virtual ~NodeIo() = default;
  virtual InterfaceObserved ObserveInterface(const Target& target) = 0;
  // nullopt when the pool does not exist on this node.
  virtual std::optional<uint64_t> ObserveHugepages(const HugepagePool& pool) = 0;

  // Setters. Each moves one control to the value given; those that take the
  // current value too change only what differs from it (the DSCP app
  // entries, the ECN priority bits). Success means the call went through,
  // not that the driver applied it: the apply reads back to verify.
  //
  // The kernel may reserve fewer pages than asked for.
  virtual absl::Status SetHugepages(const HugepagePool& pool, uint64_t count) = 0;
  virtual absl::Status SetMtu(const Target& target, uint32_t mtu) = 0;
  // Takes the port's DCBX into host mode (setdcbx HOST | VER_IEEE), or
  // hands it back to the NIC's firmware (setdcbx 0).
  virtual absl::Status SetDcbxHost(const Target& target, bool host) = 0;
  // The DSCP app table; an empty map means PCP trust.
  virtual absl::Status SetDscp(const Target& target, const DscpMap& from, const DscpMap& to) = 0;
  virtual absl::Status SetEts(const Target& target, const Ets& ets) = 0;
  virtual absl::Status SetPfc(const Target& target, const Pfc& pfc) = 0;
  // Bit N = ECN on priority N, for one end of DCQCN.
  virtual absl::Status SetEcn(const Target& target, hal::EcnRole role, uint8_t from, uint8_t to) = 0;
  // rdma_cm defaults of the target's RDMA port (target.rdma_device is set).
  virtual absl::Status SetRoceMode(const Target& target, roced::v1::RoceMode mode) = 0;
  virtual absl::Status SetRoceTos(const Target& target, uint32_t tos) = 0;
  // The port buffers' mapping and sizes (total_size is the node's).
  virtual absl::Status SetBuffer(const Target& target, const PortBuffer& buffer) = 0;
  // ETHTOOL_PFC_PREVENTION_TOUT in ms (0 disabled, 0xffff auto).
  virtual absl::Status SetPfcPrevention(const Target& target, uint16_t timeout_ms) = 0;
  // One DCQCN parameter by its MLNX_OFED name, at the given end of DCQCN.
  virtual absl::Status SetDcqcnParam(const Target& target, hal::EcnRole role, const std::string& name,
                                     uint64_t value) = 0;
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

// Confirm policies: how a provisional config confirms itself.
// The agent keeps the change provisional for the policy's window, judges
// its gates (converged, no PFC storm, the mesh's loss and p99 against a
// baseline taken just before the apply, latency probes to named peers),
// confirms it when every gate held for the whole window and returns to the
// previous config as soon as one fails.
//
// This file holds what both sides need: the policy's bounds and
// validation, its two spellings (a YAML document and a one-line spec for
// `rocectl apply|rollout --confirm-policy`), its summary for people, and
// the gates' verdict over what the agent observed (pure: the agent's
// ConfirmGuard gathers the inputs, the tests give them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "model/probe_limits.h"
#include "roced/v1/state.pb.h"

namespace roced::model {

inline constexpr absl::Duration kMinConfirmWindow = absl::Seconds(10);
inline constexpr absl::Duration kMaxConfirmWindow = absl::Hours(1);
inline constexpr double kMaxMeshP99Ratio = 100;
inline constexpr size_t kMaxConfirmProbePeers = 8;
// The mesh gates judge nothing on fewer probes (answered, for p99) than
// this, since the apply and in the baseline: a window with fewer at its
// end fails ("too few probes"), and an apply whose baseline has fewer is
// refused.
inline constexpr uint64_t kMinGateProbes = 50;
// Gate names: the GateStatus.gate values, and ConfigRollback.reason (the
// rollbacks metric's label) with "probe" for every probe gate.
inline constexpr char kGateConverged[] = "converged";
inline constexpr char kGatePfcStorm[] = "pfc_storm";
inline constexpr char kGateMeshLoss[] = "mesh_loss";
inline constexpr char kGateMeshP99[] = "mesh_p99";
inline constexpr char kGateProbe[] = "probe";
inline constexpr char kReasonConfirmTimeout[] = "confirm_timeout";
// A RollbackConfig call (`rocectl rollback`).
inline constexpr char kReasonRollback[] = "rollback";

// Errors (INVALID_ARGUMENT) name the field as `prefix`.field and its
// allowed range: window 10s-1h, at least one gate, max_mesh_loss_increase
// 0-1, max_mesh_p99_ratio 1-100, probe_peers at most 8 non-empty names of
// at most 253 bytes without repeats.
absl::Status ValidateConfirmPolicy(const roced::v1::ConfirmPolicy& policy,
                                   absl::string_view prefix = "confirm_policy");

// `text` is either a YAML mapping
//   window: 60s
//   converged: true
//   no_pfc_storm: true
//   max_mesh_loss_increase: 0.01
//   max_mesh_p99_ratio: 1.5
//   probe_peers: [node2, node3]
// or the one-line spec "window=60s,converged,no-pfc-storm,mesh-loss=0.01,
// mesh-p99=1.5,probe=node2,probe=node3" (told apart by its first line: a
// spec has no ':' before its first '='). Validated; errors name the key
// (with line and column for YAML) and its range.
absl::StatusOr<roced::v1::ConfirmPolicy> ParseConfirmPolicy(absl::string_view text);

// Whether a gate of `policy` judges traffic: a probe peer or a mesh gate
// (converged and no-PFC-storm send nothing: a config that blackholes RoCE
// passes them).
bool SendsTraffic(const roced::v1::ConfirmPolicy& policy);

// One line for people: "60s: converged, no PFC storm, mesh loss +1.0
// points, mesh p99 x1.5, probe node2".
std::string DescribeConfirmPolicy(const roced::v1::ConfirmPolicy& policy);

// What the mesh saw over some time: probes sent and lost, and the
// round-trip p99 of those answered (nullopt: none answered).
struct MeshSample {
  uint64_t sent = 0;
  uint64_t lost = 0;
  std::optional<absl::Duration> p99;
};

// One probe gate's latest run.
struct ProbeGateRun {
  std::string peer;
  bool ran = false;  // false: not run yet
  bool ok = false;
  std::string detail;  // the failure reason, or "p50 12.3us"
};

// What the gates are judged on at one moment of the window.
struct GateInputs {
  // How many checks in a row found the config not converged.
  int not_converged_checks = 0;
  std::string not_converged_fields;  // for the detail: "eth0 qos.pfc, ..."
  // Stormed (netdev, priority) now, as "eth0 priority 3"; storms counted
  // over every priority now (against the baseline's pfc_storms).
  std::vector<std::string> stormed;
  uint64_t pfc_storms = 0;
  // The mesh over the probes sent since the apply; nullopt: no mesh.
  std::optional<MeshSample> mesh_since;
  std::vector<ProbeGateRun> probes;
  // The window is over: gates still waiting fail.
  bool window_over = false;
};

struct GateVerdict {
  std::vector<roced::v1::GateStatus> gates;  // one per gate in the policy
  // The first failed gate: its reason (kGate*) and detail; empty while
  // none failed.
  std::string failed_reason;
  std::string failed_detail;
  // Every gate holding at the window's end: confirm.
  bool confirm = false;
};

GateVerdict JudgeGates(const roced::v1::ConfirmPolicy& policy, const roced::v1::ConfirmBaseline& baseline,
                       const GateInputs& in);

}  // namespace roced::model

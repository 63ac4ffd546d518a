// A rollout's decisions, pure: the batch plan, the targets file,
// the per-node outcome of a generation read from GetState, the decisions
// `rollout resume` takes for a node caught mid-step. The state file is
// state_file.h. No gRPC here: rocectl's command
// (tools/rocectl/rollout_cmd.cc) does the calls and asks these what they
// mean; the unit tests and bench/rollout_state.cc ask them directly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "roced/v1/rollout.pb.h"
#include "roced/v1/state.pb.h"

namespace roced::rollout {

// The policy a rollout uses when --confirm-policy is not given: the agent
// keeps the change provisional for a minute and returns by itself if the
// config does not stay in force or a PFC storm starts.
inline constexpr char kDefaultRolloutPolicy[] = "window=60s,converged,no-pfc-storm";
// How long past the policy's window a node may take to say how it ended
// before the rollout gives up on it ("no_outcome").
inline constexpr absl::Duration kOutcomeGrace = absl::Seconds(60);
// At most this many targets in one rollout (the mesh's member bound).
inline constexpr size_t kMaxRolloutTargets = 100000;

// --max-unavailable: "N" (1 or more) or "P%" (1-100) of `targets`, rounded
// down and at least 1. INVALID_ARGUMENT naming the flag and the allowed
// values.
absl::StatusOr<uint32_t> ParseMaxUnavailable(absl::string_view text, size_t targets);

// The batch sizes over `targets` nodes: a canary batch of `canary`, then
// batches doubling from it, none larger than `max_unavailable`, the last
// one taking what is left. INVALID_ARGUMENT (naming --canary) unless
// 1 <= canary <= min(targets, max_unavailable).
absl::StatusOr<std::vector<uint32_t>> PlanBatches(size_t targets, uint64_t canary, uint32_t max_unavailable);

// --on-failure: "pause" or "rollback".
absl::StatusOr<roced::v1::RolloutOnFailure> ParseOnFailure(absl::string_view text);

struct RolloutTarget {
  std::string name;
  std::string address;
};

// A targets file: one agent address (host:port, IPv6 in brackets) a line,
// or the mesh inventory's NAME ADDRESS [TOR [POD]] lines; '#' starts a
// comment, blank lines are skipped. Repeated addresses are refused.
// INVALID_ARGUMENT naming the line.
absl::StatusOr<std::vector<RolloutTarget>> ParseTargets(absl::string_view text);

// What became of generation `generation` on a node, from its ConfigStatus.
enum class Outcome {
  kWaiting,     // still provisional: the gates are being judged
  kConfirmed,   // in force and permanent
  kRolledBack,  // the agent returned from it by itself
  kSuperseded,  // a later generation replaced it, with no rollback of it
  kBehind,      // the node's generation is below it (state lost?)
};
struct Classified {
  Outcome outcome = Outcome::kWaiting;
  std::string reason;  // kRolledBack: the rollback's reason; else why
  std::string detail;
};
Classified ClassifyOutcome(const roced::v1::ConfigStatus& config, uint64_t generation);

// "converged holding, probe 10.0.0.3:7471 WAITING" for the live table; ""
// without gates.
std::string GateSummary(const google::protobuf::RepeatedPtrField<roced::v1::GateStatus>& gates);

// Resume, for a node recorded as applying (the apply may or may not have
// reached it) or reverting: what the node's ConfigStatus now says.
enum class Resumed {
  kSendAgain,        // the generation is unchanged: the call never landed
  kLanded,           // it landed as `generation`
  kChangedElsewhere  // someone else moved the node: leave it, say so
};
struct ResumeDecision {
  Resumed what = Resumed::kSendAgain;
  uint64_t generation = 0;
  std::string detail;  // kChangedElsewhere: what was found
};
// `config` is the rollout's config with the agent's defaults applied (as
// the agent stores it as desired).
ResumeDecision DecideApplying(const roced::v1::RolloutNode& node, const roced::v1::NodeConfig& config,
                              const roced::v1::ConfigStatus& now);
ResumeDecision DecideReverting(const roced::v1::RolloutNode& node, const roced::v1::ConfigStatus& now);

// A new rollout's state: every target pending in its batch, phase running.
roced::v1::RolloutState NewRolloutState(const std::vector<RolloutTarget>& targets,
                                        const std::vector<uint32_t>& batch_sizes);

// How many peers each node's probe gate calls when the confirm policy
// names none of its own (rocectl rollout --probe-peers).
inline constexpr uint32_t kDefaultProbePeers = 2;

// Gives each node of `state` (its batches set) up to `per_node` probe
// peers from the other targets (at most model::kMaxConfirmProbePeers):
// first a node of an earlier batch (on the new config by the time this
// node changes) and one of a later batch (still on the old one), where the
// batches allow; then nodes of its own batch, then any other. Each choice
// is spread over its candidates by the node's position, so no node is
// every node's peer. A single target gets none. The node's probe_peers
// are replaced.
void AssignProbePeers(roced::v1::RolloutState* state, uint32_t per_node = kDefaultProbePeers);

// Terminal states: nothing more is done to the node in this phase.
bool NodeDone(roced::v1::RolloutNodeState state);
// A failed outcome: halts the rollout.
bool NodeFailed(roced::v1::RolloutNodeState state);
// Running, halted or reverting: `rollout resume` has work left.
bool Unfinished(const roced::v1::RolloutState& state);

// `rollout resume` on a halted rollout retries its failed nodes: they go
// back to pending and the phase to running. Returns how many were reset.
int ResetFailedForRetry(roced::v1::RolloutState* state);

// "pending", "applying", ..., "rolled_back"; "running", "halted", ...
std::string NodeStateName(roced::v1::RolloutNodeState state);
std::string PhaseName(roced::v1::RolloutPhase phase);

}  // namespace roced::rollout

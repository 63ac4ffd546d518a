// `rocectl rollout`'s pure parts (issue 15): the batch plan, the targets
// file, the per-node outcome of a generation read from GetState, the
// decisions `rollout resume` takes for a node caught mid-step, and the
// state file (a roced.v1.RolloutState snapshot and a journal of the steps
// since, proto3 JSON). No gRPC here: the
// command (rollout_cmd.cc) does the calls and asks these what they mean,
// and the unit tests ask them directly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "roced/v1/rollout.pb.h"
#include "roced/v1/state.pb.h"

namespace roced::ctl {

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

// The state file, two files on disk: FILE, a snapshot (the whole
// RolloutState as proto3 JSON, written atomically: temp file, fsync,
// rename), and FILE.journal, the steps since (one RolloutRecord a line,
// each appended with one write()). A step costs the node's size, not the
// fleet's: a rollout writes O(steps) bytes, where rewriting the whole state
// after every step wrote O(nodes^2).
std::string RolloutJournalPath(const std::string& path);

// The snapshot alone: `state` as FILE, atomically, the journal untouched
// (RolloutStateWriter's snapshots are this, then an emptied journal).
absl::Status SaveRolloutState(const std::string& path, const roced::v1::RolloutState& state);

// The snapshot with the journal's records replayed over it, as `rollout
// status` and `rollout resume` see the rollout. NOT_FOUND when there is no
// snapshot; INVALID_ARGUMENT naming the file and line when either is not
// what rocectl writes. Safe beside a running rollout (no lock): a snapshot
// written between its two reads is seen as a gap in the records, and both
// are read again.
absl::StatusOr<roced::v1::RolloutState> LoadRolloutState(const std::string& path);

// The replay itself: the records of `journal` (FILE.journal's text) over
// `state`, in order, each overwriting its node; state->journal_seq() ends
// as the last one's. A record at or below the snapshot's journal_seq is
// older than it (a journal not yet emptied when rocectl died) and is
// skipped. A last line without its newline is a write() cut short by a
// kill and is ignored: its step's call was never sent. ABORTED on a gap in
// the numbers (a snapshot written since `state` was read);
// INVALID_ARGUMENT ("line N: ...") on a line that is not a record of this
// rollout.
absl::Status ReplayRolloutJournal(absl::string_view journal, roced::v1::RolloutState* state);

// Keeps FILE and FILE.journal as the rollout goes. Not thread-safe: the
// rollout calls it under its own lock.
class RolloutStateWriter {
 public:
  // The journal is compacted into a snapshot once it is as large as the
  // last snapshot and at least this large: the snapshots then never write
  // more than the journal did, and the journal never holds more than one
  // state's worth.
  static constexpr uint64_t kMinJournalBytes = 64 * 1024;

  explicit RolloutStateWriter(std::string path);
  ~RolloutStateWriter();
  RolloutStateWriter(const RolloutStateWriter&) = delete;
  RolloutStateWriter& operator=(const RolloutStateWriter&) = delete;

  // A new rollout over whatever FILE held: the old journal removed first
  // (its records, numbered by another rollout, must never be read over
  // this one), then the snapshot.
  absl::Status Start(roced::v1::RolloutState* state);
  // The whole state as the snapshot, state->journal_seq() set to the last
  // record's number, then the journal emptied. Crash-safe in either order
  // of discovery: until the journal is emptied its records are at or below
  // the snapshot's journal_seq and are skipped when read.
  absl::Status Snapshot(roced::v1::RolloutState* state);
  // Node `index` as it now is, appended to the journal; `durable`:
  // fdatasync'd before returning (the steps an RPC follows). A journal that
  // cannot be written gets a snapshot instead (the whole state, as every
  // step did before the journal) until a snapshot empties it again; an
  // error only when neither could be written.
  absl::Status Record(roced::v1::RolloutState* state, int index, bool durable);

  // What has been written to FILE and FILE.journal, in bytes.
  uint64_t bytes_written() const { return bytes_written_; }
  uint64_t snapshots() const { return snapshots_; }
  uint64_t snapshot_bytes() const { return snapshot_bytes_; }
  uint64_t journal_bytes() const { return journal_bytes_; }

 private:
  absl::Status Append(const std::string& line, bool durable);
  void CloseJournal();

  const std::string path_;
  const std::string journal_path_;
  int fd_ = -1;  // FILE.journal, opened by a snapshot; -1: not usable
  uint64_t seq_ = 0;
  uint64_t snapshot_bytes_ = 0;
  uint64_t journal_bytes_ = 0;
  uint64_t bytes_written_ = 0;
  uint64_t snapshots_ = 0;
};

// $XDG_STATE_HOME/rocectl/rollout.json, else ~/.local/state/rocectl/
// rollout.json, else ./rocectl-rollout.json.
std::string DefaultRolloutStatePath();

// The table `rollout status` prints and the live view redraws: a header
// (phase, config, policy) and one row per node (name, batch, state,
// generation, gates or reason).
std::string RolloutTable(const roced::v1::RolloutState& state);

}  // namespace roced::ctl

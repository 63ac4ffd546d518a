// The rollout state file: a roced.v1.RolloutState snapshot and a
// journal of the steps since, proto3 JSON, so a rocectl killed mid-rollout
// is resumed where it stood.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "roced/v1/rollout.pb.h"

namespace roced::rollout {

// The state file, two files on disk: FILE, a snapshot (the whole
// RolloutState as proto3 JSON, written atomically: temp file, fsync,
// rename), and FILE.journal, the steps since (one RolloutRecord a line,
// each appended with one write()). A step costs the node's size, not the
// fleet's: a rollout writes O(steps) bytes, where rewriting the whole state
// after every step wrote O(nodes^2).
std::string RolloutJournalPath(const std::string& path);

// The most LoadRolloutState reads of FILE and of FILE.journal (each opened
// once, a regular file; a FIFO, a directory or /dev/zero is refused naming
// the file): a state rocectl wrote holds each node's previous config, so
// 100,000 nodes (kMaxRolloutTargets) at up to ~10 KiB each.
inline constexpr size_t kMaxRolloutStateBytes = size_t{1} << 30;

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

}  // namespace roced::rollout

#include "rollout/state_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/json_util.h"
#include "util/fs.h"

namespace roced::rollout {

using roced::v1::RolloutNode;
using roced::v1::RolloutState;

std::string RolloutJournalPath(const std::string& path) { return path + ".journal"; }

namespace {

// The snapshot as written: indented, every field shown (people read it).
absl::StatusOr<std::string> SnapshotJson(const RolloutState& state) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.always_print_primitive_fields = true;
  std::string json;
  if (auto s = google::protobuf::util::MessageToJsonString(state, &json, opts); !s.ok()) {
    return absl::InternalError(absl::StrCat("rollout state to JSON: ", s.ToString()));
  }
  return json;
}

absl::Status WriteSnapshot(const std::string& path, const std::string& json) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ignored;  // WriteFileAtomic says what is wrong with it
  if (!parent.empty()) std::filesystem::create_directories(parent, ignored);
  return util::WriteFileAtomic(path, json);
}

}  // namespace

absl::Status SaveRolloutState(const std::string& path, const RolloutState& state) {
  absl::StatusOr<std::string> json = SnapshotJson(state);
  if (!json.ok()) return json.status();
  return WriteSnapshot(path, *json);
}

absl::Status ReplayRolloutJournal(absl::string_view journal, RolloutState* state) {
  const uint64_t snapshot = state->journal_seq();
  uint64_t last = snapshot;
  size_t number = 0;
  // Only lines ended by their newline: each record is written with its
  // newline in one write(), so a line without one is that write() cut
  // short by a kill (or a crash) and is left out. A prefix of a record
  // cannot be mistaken for one: it is not a whole JSON object. Its step's
  // RPC was never sent (durable steps are sent after the write returns).
  for (size_t end = journal.find('\n'); end != absl::string_view::npos; end = journal.find('\n')) {
    const absl::string_view line = journal.substr(0, end);
    journal.remove_prefix(end + 1);
    ++number;
    roced::v1::RolloutRecord record;
    if (auto s = google::protobuf::util::JsonStringToMessage(std::string(line), &record); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", number, ": not a rollout record (", std::string(s.message()), ")"));
    }
    // Older than the snapshot: already in it, and replaying it could take
    // a node back past a change the snapshot made (a retry's reset).
    if (record.seq() <= snapshot) continue;
    if (record.seq() != last + 1) {
      return absl::AbortedError(
          absl::StrCat("line ", number, ": record ", record.seq(), " where ", last + 1, " was due"));
    }
    if (record.index() >= static_cast<uint32_t>(state->nodes_size()) ||
        record.node().address() != state->nodes(static_cast<int>(record.index())).address()) {
      return absl::InvalidArgumentError(absl::StrCat("line ", number, ": record ", record.seq(), " names node ",
                                                     record.index(), " (", record.node().address(),
                                                     "), which is not this rollout's"));
    }
    *state->mutable_nodes(static_cast<int>(record.index())) = record.node();
    if (record.has_updated_at()) *state->mutable_updated_at() = record.updated_at();
    last = record.seq();
  }
  state->set_journal_seq(last);
  return absl::OkStatus();
}

namespace {

absl::StatusOr<RolloutState> ReadSnapshot(const std::string& path) {
  absl::StatusOr<std::string> text = util::ReadRegularFile(path, kMaxRolloutStateBytes, "rollout state file");
  if (!text.ok()) return text.status();
  RolloutState state;
  if (auto s = google::protobuf::util::JsonStringToMessage(*text, &state); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a rollout state file (", std::string(s.message()), ")"));
  }
  return state;
}

}  // namespace

absl::StatusOr<RolloutState> LoadRolloutState(const std::string& path) {
  const std::string journal_path = RolloutJournalPath(path);
  for (int attempt = 1;; ++attempt) {
    absl::StatusOr<RolloutState> state = ReadSnapshot(path);
    if (!state.ok()) return state.status();
    absl::StatusOr<std::string> journal =
        util::ReadRegularFile(journal_path, kMaxRolloutStateBytes, "rollout journal");
    if (absl::IsNotFound(journal.status())) return state;  // nothing since the snapshot
    if (!journal.ok()) return journal.status();
    absl::Status s = ReplayRolloutJournal(*journal, &*state);
    // A gap: a rollout running beside this read wrote a snapshot and
    // emptied the journal between the two reads. Read both again.
    if (absl::IsAborted(s) && attempt < 5) continue;
    if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(journal_path, ": ", s.message()));
    return state;
  }
}

RolloutStateWriter::RolloutStateWriter(std::string path)
    : path_(std::move(path)), journal_path_(RolloutJournalPath(path_)) {}

RolloutStateWriter::~RolloutStateWriter() { CloseJournal(); }

void RolloutStateWriter::CloseJournal() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

absl::Status RolloutStateWriter::Start(RolloutState* state) {
  CloseJournal();
  if (::unlink(journal_path_.c_str()) != 0 && errno != ENOENT) {
    return util::ErrnoToStatus(errno, absl::StrCat("remove ", journal_path_, " (an older rollout's journal)"));
  }
  seq_ = 0;
  state->set_journal_seq(0);
  return Snapshot(state);
}

absl::Status RolloutStateWriter::Snapshot(RolloutState* state) {
  seq_ = std::max(seq_, state->journal_seq());
  state->set_journal_seq(seq_);
  absl::StatusOr<std::string> json = SnapshotJson(*state);
  if (!json.ok()) return json.status();
  // The journal as it was stays valid beside the snapshot as it was.
  if (absl::Status s = WriteSnapshot(path_, *json); !s.ok()) return s;
  ++snapshots_;
  snapshot_bytes_ = json->size();
  bytes_written_ += json->size();
  // Now empty the journal. Dying before this leaves records at or below
  // the snapshot's journal_seq, skipped when read; failing to leaves the
  // journal unused (every step a snapshot) until a later snapshot can.
  journal_bytes_ = 0;
  if (fd_ >= 0 && ::ftruncate(fd_, 0) != 0) CloseJournal();
  // O_NOFOLLOW|O_NONBLOCK: a symlink or a FIFO planted at the journal's
  // path is refused (then every step is a snapshot), not written through
  // or waited on.
  if (fd_ < 0) {
    constexpr int kFlags = O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
    fd_ = ::open(journal_path_.c_str(), kFlags, 0640);
  }
  return absl::OkStatus();
}

absl::Status RolloutStateWriter::Append(const std::string& line, bool durable) {
  if (fd_ < 0) return absl::UnavailableError(absl::StrCat(journal_path_, " is not open"));
  ssize_t n = 0;
  do {
    n = ::write(fd_, line.data(), line.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) return util::ErrnoToStatus(errno, absl::StrCat("write ", journal_path_));
  // A short write left part of a line: nothing may follow it but a
  // snapshot's emptying.
  if (static_cast<size_t>(n) != line.size()) {
    return absl::UnavailableError(absl::StrCat("short write to ", journal_path_));
  }
  if (durable && ::fdatasync(fd_) != 0) return util::ErrnoToStatus(errno, absl::StrCat("fdatasync ", journal_path_));
  return absl::OkStatus();
}

absl::Status RolloutStateWriter::Record(RolloutState* state, int index, bool durable) {
  roced::v1::RolloutRecord record;
  // Numbered even if the append fails: the snapshot that replaces it then
  // covers whatever of it reached the file.
  record.set_seq(++seq_);
  record.set_index(static_cast<uint32_t>(index));
  *record.mutable_node() = state->nodes(index);
  if (state->has_updated_at()) *record.mutable_updated_at() = state->updated_at();
  std::string line;
  if (auto s = google::protobuf::util::MessageToJsonString(record, &line); !s.ok()) {
    return absl::InternalError(absl::StrCat("rollout record to JSON: ", s.ToString()));
  }
  line.push_back('\n');
  if (absl::Status s = Append(line, durable); !s.ok()) {
    CloseJournal();
    absl::Status snapshot = Snapshot(state);
    if (snapshot.ok()) return absl::OkStatus();
    return absl::Status(snapshot.code(), absl::StrCat(s.message(), "; then ", snapshot.message()));
  }
  journal_bytes_ += line.size();
  bytes_written_ += line.size();
  state->set_journal_seq(seq_);
  // The step is saved. A compaction that fails leaves the journal as it
  // was, whole, and is tried again at the next step.
  if (journal_bytes_ >= std::max(snapshot_bytes_, kMinJournalBytes)) Snapshot(state).IgnoreError();
  return absl::OkStatus();
}

}  // namespace roced::rollout

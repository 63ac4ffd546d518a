// `rocectl rollout`'s pure parts (see rollout.h).
#include "tools/rocectl/rollout.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "mesh/inventory.h"
#include "model/confirm_policy.h"
#include "util/fs.h"
#include "util/ip_subnet.h"

namespace roced::ctl {

using roced::v1::RolloutNode;
using roced::v1::RolloutState;

absl::StatusOr<uint32_t> ParseMaxUnavailable(absl::string_view text, size_t targets) {
  const auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat("--max-unavailable: '", text,
                                                   "' is not N (a number of nodes, 1 or more) or P% "
                                                   "(a percentage of the targets, 1% to 100%)"));
  };
  uint32_t n = 0;
  if (absl::ConsumeSuffix(&text, "%")) {
    if (!absl::SimpleAtoi(text, &n) || n < 1 || n > 100) return bad();
    // Rounded down: "at most P%" must not round up past it, but a rollout
    // always moves at least one node at a time.
    return static_cast<uint32_t>(std::max<uint64_t>(1, uint64_t{n} * targets / 100));
  }
  if (!absl::SimpleAtoi(text, &n) || n < 1) return bad();
  return n;
}

absl::StatusOr<std::vector<uint32_t>> PlanBatches(size_t targets, uint64_t canary, uint32_t max_unavailable) {
  if (targets == 0) return absl::InvalidArgumentError("no targets to roll out to");
  if (canary < 1 || canary > targets) {
    return absl::InvalidArgumentError(
        absl::StrCat("--canary: ", canary, " is not in 1-", targets, " (the number of targets)"));
  }
  if (canary > max_unavailable) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--canary: ", canary, " is larger than --max-unavailable (", max_unavailable,
        " node(s)): the canary batch would change more nodes at once than allowed; allowed 1-", max_unavailable));
  }
  std::vector<uint32_t> batches = {static_cast<uint32_t>(canary)};
  size_t left = targets - canary;
  uint64_t size = canary;
  while (left > 0) {
    // Doubling: each batch that confirmed is evidence for one twice its
    // size, up to what may be unavailable at once.
    size = std::min<uint64_t>(size * 2, max_unavailable);
    const uint32_t batch = static_cast<uint32_t>(std::min<uint64_t>(size, left));
    batches.push_back(batch);
    left -= batch;
  }
  return batches;
}

absl::StatusOr<roced::v1::RolloutOnFailure> ParseOnFailure(absl::string_view text) {
  if (text == "pause") return roced::v1::ROLLOUT_ON_FAILURE_PAUSE;
  if (text == "rollback") return roced::v1::ROLLOUT_ON_FAILURE_ROLLBACK;
  return absl::InvalidArgumentError(absl::StrCat("--on-failure: '", text, "' is not one of pause, rollback"));
}

namespace {

// The words of a line, its comment and a CR left out.
std::vector<absl::string_view> Words(absl::string_view line) {
  if (size_t hash = line.find('#'); hash != absl::string_view::npos) line = line.substr(0, hash);
  return absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
}

}  // namespace

absl::StatusOr<std::vector<RolloutTarget>> ParseTargets(absl::string_view text) {
  std::vector<RolloutTarget> out;
  bool inventory = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) inventory |= Words(line).size() > 1;
  if (inventory) {
    // The same file `rocectl mesh --targets` reads, read the same way.
    auto members = mesh::ParseInventory(std::string_view(text.data(), text.size()));
    if (!members.ok()) return members.status();
    for (const auto& m : *members) out.push_back({m.name, m.address});
  } else {
    size_t number = 0;
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      ++number;
      const std::vector<absl::string_view> words = Words(line);
      if (words.empty()) continue;
      if (!util::IsHostPort(std::string_view(words[0].data(), words[0].size()))) {
        return absl::InvalidArgumentError(absl::StrCat("line ", number, ": '", words[0],
                                                       "' is not host:port with a port in [1, 65535] "
                                                       "(IPv6: [host]:port)"));
      }
      out.push_back({std::string(words[0]), std::string(words[0])});
    }
  }
  if (out.size() > kMaxRolloutTargets) {
    return absl::InvalidArgumentError(absl::StrCat(out.size(), " targets; at most ", kMaxRolloutTargets));
  }
  std::set<std::string> seen;
  for (const auto& t : out) {
    if (!seen.insert(t.address).second) {
      return absl::InvalidArgumentError(absl::StrCat("'", t.address, "' is listed twice"));
    }
  }
  return out;
}

Classified ClassifyOutcome(const roced::v1::ConfigStatus& config, uint64_t generation) {
  Classified c;
  // A rollback is a later generation too: asked first.
  if (config.has_last_rollback() && config.last_rollback().generation() == generation) {
    c.outcome = Outcome::kRolledBack;
    c.reason = config.last_rollback().reason();
    c.detail = absl::StrCat(config.last_rollback().detail(), config.last_rollback().detail().empty() ? "" : " ",
                            "(returned to generation ", config.last_rollback().returned_to(), ")");
  } else if (config.generation() == generation) {
    c.outcome = config.has_confirm_deadline() ? Outcome::kWaiting : Outcome::kConfirmed;
  } else if (config.generation() > generation) {
    c.outcome = Outcome::kSuperseded;
    c.reason = "superseded";
    c.detail = absl::StrCat("generation ", generation, " was replaced by ", config.generation(),
                            " without a rollback of it (another writer?)");
  } else {
    c.outcome = Outcome::kBehind;
    c.reason = "generation_lost";
    c.detail = absl::StrCat("the node is at generation ", config.generation(), ", below ", generation,
                            " (its state directory lost?)");
  }
  return c;
}

std::string GateSummary(const google::protobuf::RepeatedPtrField<roced::v1::GateStatus>& gates) {
  std::vector<std::string> parts;
  for (const auto& g : gates) {
    const char* state = g.state() == roced::v1::GATE_STATE_HOLDING   ? "holding"
                        : g.state() == roced::v1::GATE_STATE_FAILED  ? "FAILED"
                        : g.state() == roced::v1::GATE_STATE_WAITING ? "waiting"
                                                                     : "?";
    parts.push_back(absl::StrCat(g.gate(), " ", state));
  }
  return absl::StrJoin(parts, ", ");
}

namespace {

ResumeDecision Decide(uint64_t from, const roced::v1::NodeConfig& sent, const roced::v1::ConfigStatus& now,
                      bool rolled_back_counts) {
  ResumeDecision d;
  if (now.generation() == from) return d;  // kSendAgain
  const uint64_t landed = from + 1;
  const bool same = google::protobuf::util::MessageDifferencer::Equals(now.desired(), sent);
  // Landed and since rolled back by the agent: the desired config is the
  // previous one again, but the rollback names the generation it made.
  const bool returned = rolled_back_counts && now.has_last_rollback() && now.last_rollback().generation() == landed;
  if ((now.generation() == landed && same) || returned) {
    d.what = Resumed::kLanded;
    d.generation = landed;
    return d;
  }
  d.what = Resumed::kChangedElsewhere;
  d.detail = absl::StrCat("the node moved from generation ", from, " to ", now.generation(),
                          same ? "" : " with a desired config that is not the one sent", ": left as it is");
  return d;
}

}  // namespace

ResumeDecision DecideApplying(const RolloutNode& node, const roced::v1::NodeConfig& config,
                              const roced::v1::ConfigStatus& now) {
  return Decide(node.previous_generation(), config, now, true);
}

ResumeDecision DecideReverting(const RolloutNode& node, const roced::v1::ConfigStatus& now) {
  return Decide(node.revert_from(), node.previous_config(), now, false);
}

RolloutState NewRolloutState(const std::vector<RolloutTarget>& targets, const std::vector<uint32_t>& batch_sizes) {
  RolloutState state;
  size_t next = 0;
  for (size_t b = 0; b < batch_sizes.size(); ++b) {
    state.add_batch_sizes(batch_sizes[b]);
    for (uint32_t i = 0; i < batch_sizes[b] && next < targets.size(); ++i, ++next) {
      RolloutNode* node = state.add_nodes();
      node->set_name(targets[next].name);
      node->set_address(targets[next].address);
      node->set_batch(static_cast<uint32_t>(b));
      node->set_state(roced::v1::ROLLOUT_NODE_STATE_PENDING);
    }
  }
  state.set_phase(roced::v1::ROLLOUT_PHASE_RUNNING);
  return state;
}

bool NodeDone(roced::v1::RolloutNodeState s) {
  return s == roced::v1::ROLLOUT_NODE_STATE_CONFIRMED || s == roced::v1::ROLLOUT_NODE_STATE_ROLLED_BACK ||
         s == roced::v1::ROLLOUT_NODE_STATE_FAILED || s == roced::v1::ROLLOUT_NODE_STATE_REVERTED ||
         s == roced::v1::ROLLOUT_NODE_STATE_SKIPPED;
}

bool NodeFailed(roced::v1::RolloutNodeState s) {
  return s == roced::v1::ROLLOUT_NODE_STATE_ROLLED_BACK || s == roced::v1::ROLLOUT_NODE_STATE_FAILED;
}

bool Unfinished(const RolloutState& state) {
  return state.phase() == roced::v1::ROLLOUT_PHASE_RUNNING || state.phase() == roced::v1::ROLLOUT_PHASE_HALTED ||
         state.phase() == roced::v1::ROLLOUT_PHASE_REVERTING;
}

int ResetFailedForRetry(RolloutState* state) {
  if (state->phase() != roced::v1::ROLLOUT_PHASE_HALTED) return 0;
  int reset = 0;
  for (RolloutNode& node : *state->mutable_nodes()) {
    if (!NodeFailed(node.state())) continue;
    // Read afresh at the retry: what the node has now is its previous.
    const RolloutNode kept = node;
    node.Clear();
    node.set_address(kept.address());
    node.set_name(kept.name());
    node.set_batch(kept.batch());
    node.set_state(roced::v1::ROLLOUT_NODE_STATE_PENDING);
    ++reset;
  }
  state->set_phase(roced::v1::ROLLOUT_PHASE_RUNNING);
  state->clear_halted_by();
  state->clear_halt_reason();
  return reset;
}

namespace {

std::string EnumSuffix(const std::string& full, absl::string_view prefix) {
  absl::string_view name = full;
  absl::ConsumePrefix(&name, prefix);
  return absl::AsciiStrToLower(name);
}

}  // namespace

std::string NodeStateName(roced::v1::RolloutNodeState state) {
  return EnumSuffix(roced::v1::RolloutNodeState_Name(state), "ROLLOUT_NODE_STATE_");
}

std::string PhaseName(roced::v1::RolloutPhase phase) {
  return EnumSuffix(roced::v1::RolloutPhase_Name(phase), "ROLLOUT_PHASE_");
}

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
  absl::StatusOr<std::string> text = util::ReadFile(path);
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
    absl::StatusOr<std::string> journal = util::ReadFile(journal_path);
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
  if (fd_ < 0) fd_ = ::open(journal_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0640);
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

std::string DefaultRolloutStatePath() {
  if (const char* x = std::getenv("XDG_STATE_HOME"); x != nullptr && *x == '/') {
    return absl::StrCat(x, "/rocectl/rollout.json");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') {
    return absl::StrCat(home, "/.local/state/rocectl/rollout.json");
  }
  return "rocectl-rollout.json";
}

namespace {

std::string GenerationCell(const RolloutNode& n) {
  // Nothing recorded before the apply: it never reached the node.
  if (!n.has_applied_at()) return "-";
  std::string cell = absl::StrCat(n.previous_generation(), " -> ");
  absl::StrAppend(&cell, n.generation() == 0 ? "?" : absl::StrCat(n.generation()));
  if (n.reverted_generation() != 0) absl::StrAppend(&cell, " -> ", n.reverted_generation());
  return cell;
}

std::string LastCell(const RolloutNode& n) {
  if (n.state() == roced::v1::ROLLOUT_NODE_STATE_WAITING) return GateSummary(n.gates());
  if (!n.reason().empty()) return absl::StrCat(n.reason(), n.detail().empty() ? "" : ": ", n.detail());
  return n.detail();
}

std::string Pad(absl::string_view s, size_t width) {
  std::string out(s);
  if (out.size() < width) out.resize(width, ' ');
  return out;
}

}  // namespace

std::string RolloutTable(const RolloutState& state) {
  std::map<roced::v1::RolloutNodeState, int> counts;
  size_t name_width = 4;
  for (const auto& n : state.nodes()) {
    ++counts[n.state()];
    name_width = std::max(name_width, n.name().size());
  }
  std::vector<std::string> tally;
  for (const auto& [s, count] : counts) tally.push_back(absl::StrCat(count, " ", NodeStateName(s)));
  std::string out = absl::StrCat("Rollout of ", state.config_path(), ": ", PhaseName(state.phase()), " (",
                                 state.nodes_size(), " node(s) in ", state.batch_sizes_size(), " batch(es): ",
                                 absl::StrJoin(tally, ", "), ")\n");
  absl::StrAppend(&out, "Confirm policy: ", model::DescribeConfirmPolicy(state.confirm_policy()), "\n");
  if (!state.halted_by().empty()) {
    absl::StrAppend(&out, "Halted by ", state.halted_by(), ": ", state.halt_reason(), "\n");
  }
  absl::StrAppend(&out, Pad("NODE", name_width), "  BATCH  ", Pad("STATE", 11), "  ", Pad("GENERATION", 14),
                  "  GATES / REASON\n");
  for (const auto& n : state.nodes()) {
    std::string row = absl::StrCat(Pad(n.name(), name_width), "  ", Pad(absl::StrCat(n.batch()), 5), "  ",
                                   Pad(NodeStateName(n.state()), 11), "  ", Pad(GenerationCell(n), 14), "  ",
                                   LastCell(n));
    absl::StripTrailingAsciiWhitespace(&row);
    absl::StrAppend(&out, row, "\n");
  }
  return out;
}

}  // namespace roced::ctl

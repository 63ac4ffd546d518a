// The agent's state directory: accepted.json (the accepted config, its
// generation and source, a provisional config's deadline and priors),
// `generation` (the highest generation accepted, written before
// accepted.json, so that losing accepted.json cannot take the generation
// back) and apply-journal.json (the pre-apply values of an apply in
// progress). Files are proto3 JSON (the generation: a decimal number)
// written atomically (temporary file, fsync, rename, fsync of the
// directory). Fields this version does not know are ignored on reading, so
// a downgrade keeps a config a newer agent accepted. A file that cannot be
// used is never overwritten in place: it is renamed aside for the operator.
// An empty directory name turns every call into a no-op (tests,
// --state-dir "").
//
// Threads: used under the agent's reconcile_mu_ only; not synchronised itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "roced/v1/state.pb.h"

namespace roced::agent {

// The contents of accepted.json and apply-journal.json parsed as
// LoadPersisted and LoadJournal parse a file's text (proto3 JSON; unknown
// fields ignored). INVALID_ARGUMENT saying why when the text does not
// parse. Pure.
absl::StatusOr<roced::v1::AcceptedConfig> ParseAcceptedJson(const std::string& text);
absl::StatusOr<roced::v1::ApplyJournal> ParseJournalJson(const std::string& text);
// The text SaveAccepted and WriteJournal write for `message`; INTERNAL when
// it has no JSON form (a timestamp out of range).
absl::StatusOr<std::string> StateJson(const google::protobuf::Message& message);

// What the state directory held at start-up.
struct PersistedState {
  // accepted.json; nullopt when absent or set aside.
  std::optional<roced::v1::AcceptedConfig> accepted;
  // Where generations continue: the larger of accepted.json's generation
  // and the `generation` file's.
  uint64_t generation_floor = 0;
  // Each state file that could not be used: why, and where it was kept.
  std::vector<std::string> problems;
};

// The `generation` file's text parsed: a decimal number and an optional
// newline. INVALID_ARGUMENT otherwise. Pure.
absl::StatusOr<uint64_t> ParseGenerationText(const std::string& text);

class StateDir {
 public:
  // Removes temporary files a crash left between writing and renaming.
  explicit StateDir(std::string dir);

  // INVALID_ARGUMENT when `accepted` cannot be written as proto JSON (e.g.
  // a timestamp out of range): checked before a config is applied.
  static absl::Status CheckStorable(const roced::v1::AcceptedConfig& accepted);

  // accepted.json and the generation floor. An accepted.json that does not
  // parse is renamed aside (SetAsideAccepted) and reported in `problems`;
  // so is a `generation` file that does not parse (it is rewritten on the
  // next save).
  PersistedState LoadPersisted() const;
  // Renames accepted.json to accepted.json.bad-<UTC time> (the newest
  // kKeptAside such files are kept, older ones removed) and returns one
  // line for the operator: `why` and the file's new name.
  std::string SetAsideAccepted(const std::string& why) const;
  static constexpr int kKeptAside = 4;
  // Writes the generation file, then accepted.json.
  absl::Status SaveAccepted(const roced::v1::AcceptedConfig& accepted) const;
  // OK when the directory exists (it is created if missing) and a file can
  // be written in it; else the error, naming the directory.
  absl::Status CheckWritable() const;
  const std::string& dir() const { return dir_; }

  // Records the values an apply is about to overwrite (nothing when `prior`
  // is empty). `for_generation` is the generation the apply would get; 0
  // for a rollback.
  absl::Status WriteJournal(uint64_t for_generation, const std::string& reason,
                            const std::vector<roced::v1::PriorValue>& prior) const;
  // The journal on disk; an unreadable one is logged and removed.
  std::optional<roced::v1::ApplyJournal> LoadJournal() const;
  void RemoveJournal() const;

 private:
  std::string AcceptedPath() const { return dir_ + "/accepted.json"; }
  std::string GenerationPath() const { return dir_ + "/generation"; }
  std::string JournalPath() const { return dir_ + "/apply-journal.json"; }

  const std::string dir_;
};

}  // namespace roced::agent

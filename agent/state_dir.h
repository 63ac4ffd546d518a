// The agent's state directory: accepted.json (the accepted config, its
// generation and source, a provisional config's deadline and priors) and
// apply-journal.json (the pre-apply values of an apply in progress). Files
// are proto3 JSON written atomically (temporary file, fsync, rename). An
// empty directory name turns every call into a no-op (tests, --state-dir "").
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

// The contents of accepted.json and apply-journal.json parsed as LoadAccepted
// and LoadJournal parse a file's text (proto3 JSON; unknown fields are
// errors). INVALID_ARGUMENT saying why when the text does not parse. Pure.
absl::StatusOr<roced::v1::AcceptedConfig> ParseAcceptedJson(const std::string& text);
absl::StatusOr<roced::v1::ApplyJournal> ParseJournalJson(const std::string& text);
// The text SaveAccepted and WriteJournal write for `message`; INTERNAL when
// it has no JSON form (a timestamp out of range).
absl::StatusOr<std::string> StateJson(const google::protobuf::Message& message);

class StateDir {
 public:
  // Removes temporary files a crash left between writing and renaming.
  explicit StateDir(std::string dir);

  // INVALID_ARGUMENT when `accepted` cannot be written as proto JSON (e.g.
  // a timestamp out of range): checked before a config is applied.
  static absl::Status CheckStorable(const roced::v1::AcceptedConfig& accepted);

  // The persisted accepted config; nullopt when absent or unreadable (the
  // latter is logged).
  std::optional<roced::v1::AcceptedConfig> LoadAccepted() const;
  absl::Status SaveAccepted(const roced::v1::AcceptedConfig& accepted) const;

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
  std::string JournalPath() const { return dir_ + "/apply-journal.json"; }

  const std::string dir_;
};

}  // namespace roced::agent

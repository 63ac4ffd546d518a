#include "agent/core/state_dir.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "util/fs.h"
#include "util/log.h"

namespace roced::agent {

absl::StatusOr<std::string> StateJson(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  auto st = google::protobuf::util::MessageToJsonString(message, &json, opts);
  if (!st.ok()) return absl::InternalError(st.ToString());
  return json;
}

namespace {

absl::Status WriteJsonFile(const std::string& path, const google::protobuf::Message& message) {
  absl::StatusOr<std::string> json = StateJson(message);
  if (!json.ok()) return json.status();
  return util::WriteFileAtomic(path, *json);
}

absl::Status ParseJson(const std::string& text, google::protobuf::Message* message) {
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;  // a newer agent's fields: a downgrade keeps the rest
  if (auto st = google::protobuf::util::JsonStringToMessage(text, message, opts); !st.ok()) {
    return absl::InvalidArgumentError(st.ToString());
  }
  return absl::OkStatus();
}

// The newest `keep` names among `names` (which sort by time), the rest to remove.
std::vector<std::string> BeyondNewest(std::vector<std::string> names, size_t keep) {
  std::sort(names.begin(), names.end());
  if (names.size() <= keep) return {};
  names.resize(names.size() - keep);
  return names;
}

// A state file, bounded (util::kMaxStateFileBytes) and a regular file only;
// a failure other than "absent" is added to `problems`.
absl::StatusOr<std::string> ReadStateFile(const std::string& path, std::vector<std::string>* problems) {
  absl::StatusOr<std::string> text = util::ReadRegularFile(path, util::kMaxStateFileBytes, "state file");
  if (!text.ok() && !absl::IsNotFound(text.status())) {
    problems->push_back(absl::StrCat(text.status().message(), "; ignored, rewritten on the next accepted config"));
  }
  return text;
}

}  // namespace

absl::StatusOr<roced::v1::AcceptedConfig> ParseAcceptedJson(const std::string& text) {
  roced::v1::AcceptedConfig accepted;
  if (absl::Status st = ParseJson(text, &accepted); !st.ok()) return st;
  return accepted;
}

absl::StatusOr<roced::v1::ApplyJournal> ParseJournalJson(const std::string& text) {
  roced::v1::ApplyJournal journal;
  if (absl::Status st = ParseJson(text, &journal); !st.ok()) return st;
  return journal;
}

absl::StatusOr<uint64_t> ParseGenerationText(const std::string& text) {
  absl::string_view digits = text;
  absl::ConsumeSuffix(&digits, "\n");
  uint64_t generation = 0;
  if (digits.empty() || digits.size() > 20 || !std::all_of(digits.begin(), digits.end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(digits, &generation)) {
    return absl::InvalidArgumentError("not a generation number (decimal digits and a newline)");
  }
  return generation;
}

StateDir::StateDir(std::string dir) : dir_(std::move(dir)) {
  if (dir_.empty()) return;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (!absl::StartsWith(name, "accepted.json.tmp.") && !absl::StartsWith(name, "apply-journal.json.tmp.") &&
        !absl::StartsWith(name, "generation.tmp.")) {
      continue;
    }
    std::error_code rm;
    if (std::filesystem::remove(entry.path(), rm)) {
      LOG_INFO << "removed " << entry.path().string() << ", left by an interrupted write";
    }
  }
}

absl::Status StateDir::CheckStorable(const roced::v1::AcceptedConfig& accepted) {
  std::string json;
  if (auto st = google::protobuf::util::MessageToJsonString(accepted, &json); !st.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("config cannot be stored (nothing changed): ", std::string(st.message())));
  }
  return absl::OkStatus();
}

PersistedState StateDir::LoadPersisted() const {
  PersistedState out;
  if (dir_.empty()) return out;
  if (absl::StatusOr<std::string> text = ReadStateFile(GenerationPath(), &out.problems); text.ok()) {
    if (absl::StatusOr<uint64_t> g = ParseGenerationText(*text); g.ok()) {
      out.generation_floor = *g;
    } else {
      out.problems.push_back(absl::StrCat(GenerationPath(), " is unreadable (", g.status().message(),
                                          "); rewritten on the next accepted config"));
    }
  }
  if (absl::StatusOr<std::string> text = ReadStateFile(AcceptedPath(), &out.problems); text.ok()) {
    absl::StatusOr<roced::v1::AcceptedConfig> accepted = ParseAcceptedJson(*text);
    if (accepted.ok()) {
      out.generation_floor = std::max(out.generation_floor, accepted->generation());
      out.accepted = *std::move(accepted);
    } else {
      out.problems.push_back(
          SetAsideAccepted(absl::StrCat("does not parse (", accepted.status().message(), ")")));
    }
  }
  for (const std::string& p : out.problems) LOG_ERROR << p;
  return out;
}

std::string StateDir::SetAsideAccepted(const std::string& why) const {
  const std::string from = AcceptedPath();
  const std::string to =
      absl::StrCat(from, ".bad-", absl::FormatTime("%Y%m%dT%H%M%E6SZ", absl::Now(), absl::UTCTimeZone()));
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return absl::StrCat(from, " ", why, "; it could not be kept aside (", std::strerror(errno),
                        ") and will be replaced by the next accepted config");
  }
  std::vector<std::string> kept;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (absl::StartsWith(name, "accepted.json.bad-")) kept.push_back(entry.path().string());
  }
  for (const std::string& old : BeyondNewest(kept, kKeptAside)) {
    std::error_code rm;
    std::filesystem::remove(old, rm);
  }
  return absl::StrCat(from, " ", why, "; kept as ", to);
}

absl::Status StateDir::SaveAccepted(const roced::v1::AcceptedConfig& accepted) const {
  if (dir_.empty()) return absl::OkStatus();
  // The generation first: whatever happens to accepted.json, it is where
  // the next generation starts.
  if (absl::Status s = util::WriteFileAtomic(GenerationPath(), absl::StrCat(accepted.generation(), "\n")); !s.ok()) {
    return s;
  }
  return WriteJsonFile(AcceptedPath(), accepted);
}

absl::Status StateDir::CheckWritable() const {
  if (dir_.empty()) return absl::OkStatus();
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("cannot create ", dir_, ": ", ec.message()));
  // Named like WriteFileAtomic's temporaries, so a crash here leaves
  // nothing the next start does not remove.
  const std::string probe = absl::StrCat(GenerationPath(), ".tmp.", ::getpid());
  if (absl::Status s = util::WriteFileAtomic(probe, ""); !s.ok()) {
    return absl::UnavailableError(absl::StrCat("cannot write in ", dir_, ": ", s.message()));
  }
  ::unlink(probe.c_str());
  return absl::OkStatus();
}

absl::Status StateDir::WriteJournal(uint64_t for_generation, const std::string& reason,
                                    const std::vector<roced::v1::PriorValue>& prior) const {
  if (dir_.empty() || prior.empty()) return absl::OkStatus();
  roced::v1::ApplyJournal journal;
  journal.set_for_generation(for_generation);
  journal.set_reason(reason);
  *journal.mutable_started_at() = google::protobuf::util::TimeUtil::GetCurrentTime();
  for (const auto& p : prior) *journal.add_prior() = p;
  return WriteJsonFile(JournalPath(), journal);
}

std::optional<roced::v1::ApplyJournal> StateDir::LoadJournal() const {
  if (dir_.empty()) return std::nullopt;
  absl::StatusOr<std::string> text = util::ReadRegularFile(JournalPath(), util::kMaxStateFileBytes, "state file");
  if (!text.ok()) {
    if (absl::IsNotFound(text.status())) return std::nullopt;
    LOG_ERROR << text.status().message() << "; removing it";
    RemoveJournal();
    return std::nullopt;
  }
  absl::StatusOr<roced::v1::ApplyJournal> journal = ParseJournalJson(*text);
  if (!journal.ok()) {
    LOG_ERROR << JournalPath() << " is unreadable (" << journal.status().message() << "); removing it";
    RemoveJournal();
    return std::nullopt;
  }
  return *std::move(journal);
}

void StateDir::RemoveJournal() const {
  if (dir_.empty()) return;
  const std::string path = JournalPath();
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    LOG_WARNING << "cannot remove " << path << ": " << std::strerror(errno);
  }
}

}  // namespace roced::agent

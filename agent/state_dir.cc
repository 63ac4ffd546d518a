#include "agent/state_dir.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

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

enum class JsonRead { kAbsent, kUnreadable, kOk };

absl::Status ParseJson(const std::string& text, google::protobuf::Message* message) {
  if (auto st = google::protobuf::util::JsonStringToMessage(text, message); !st.ok()) {
    return absl::InvalidArgumentError(st.ToString());
  }
  return absl::OkStatus();
}

// Reads `path` into `message`; a file that does not parse is logged.
JsonRead ReadJsonFile(const std::string& path, google::protobuf::Message* message) {
  auto text = util::ReadFile(path);
  if (!text.ok()) return JsonRead::kAbsent;
  if (absl::Status st = ParseJson(*text, message); !st.ok()) {
    LOG_ERROR << path << " is unreadable (" << st.message() << "); ignoring it";
    return JsonRead::kUnreadable;
  }
  return JsonRead::kOk;
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

StateDir::StateDir(std::string dir) : dir_(std::move(dir)) {
  if (dir_.empty()) return;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (!absl::StartsWith(name, "accepted.json.tmp.") && !absl::StartsWith(name, "apply-journal.json.tmp.")) continue;
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

std::optional<roced::v1::AcceptedConfig> StateDir::LoadAccepted() const {
  if (dir_.empty()) return std::nullopt;
  roced::v1::AcceptedConfig accepted;
  if (ReadJsonFile(AcceptedPath(), &accepted) != JsonRead::kOk) return std::nullopt;
  return accepted;
}

absl::Status StateDir::SaveAccepted(const roced::v1::AcceptedConfig& accepted) const {
  if (dir_.empty()) return absl::OkStatus();
  return WriteJsonFile(AcceptedPath(), accepted);
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
  roced::v1::ApplyJournal journal;
  switch (ReadJsonFile(JournalPath(), &journal)) {
    case JsonRead::kAbsent: return std::nullopt;
    case JsonRead::kUnreadable: RemoveJournal(); return std::nullopt;
    case JsonRead::kOk: break;
  }
  return journal;
}

void StateDir::RemoveJournal() const {
  if (dir_.empty()) return;
  const std::string path = JournalPath();
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    LOG_WARNING << "cannot remove " << path << ": " << std::strerror(errno);
  }
}

}  // namespace roced::agent

// Fuzz target 3: <state-dir>/accepted.json as the agent reads it at
// start-up (and the same bytes as the `generation` file: ParseGenerationText).
// Text -> ParseAcceptedJson (what StateDir::LoadPersisted does with the
// file) -> ResolveStartupConfig against no config file, the same file
// (digest equal) and an edited one, at a time before and after any
// confirm deadline -> what Agent::Accept does with the choice (defaults,
// CheckStorable) -> the expired provisional config's priors through the
// restore path -> ValidateConfig of the config taken up. Property: what
// parses and can be stored parses back to the same message (a restart
// reads what was written).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/core/config_lifecycle.h"
#include "agent/core/state_dir.h"
#include "fuzz_check.h"
#include "google/protobuf/util/message_differencer.h"
#include "model/validate.h"
#include "restore_fuzz_node.h"

using google::protobuf::util::MessageDifferencer;
using roced::v1::AcceptedConfig;

namespace {

void TakeUp(const std::optional<AcceptedConfig>& persisted, const std::optional<AcceptedConfig>& file,
            absl::Time now) {
  std::optional<roced::agent::StartupChoice> choice = roced::agent::ResolveStartupConfig(persisted, file, now);
  if (!choice) return;
  AcceptedConfig accepted = choice->accept;
  roced::model::ApplyDefaults(accepted.mutable_config());
  (void)roced::agent::StateDir::CheckStorable(accepted);
  if (!choice->restore.empty()) {
    // As Agent::ResolveStartupLocked queues them, with no state directory
    // (the journal writes are no-ops).
    const roced::agent::StateDir none("");
    roced::agent::RestoreQueue queue(&none);
    queue.Add("start-up rollback", choice->restore);
    roced::fuzz::RunRestore(&queue, choice->restore);
  }
  std::vector<roced::v1::ValidationIssue> issues;
  roced::model::ValidateConfig(accepted.config(), nullptr, &issues);
  if (accepted.provisional()) (void)roced::agent::Confirmed(accepted);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  roced::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The `generation` file beside it: a number that reads back as written.
  if (absl::StatusOr<uint64_t> g = roced::agent::ParseGenerationText(text); g.ok()) {
    FUZZ_CHECK(*roced::agent::ParseGenerationText(absl::StrCat(*g, "\n")) == *g, "a generation reads back");
  }
  absl::StatusOr<AcceptedConfig> persisted = roced::agent::ParseAcceptedJson(text);
  if (!persisted.ok()) return 0;

  if (roced::agent::StateDir::CheckStorable(*persisted).ok()) {
    absl::StatusOr<std::string> json = roced::agent::StateJson(*persisted);
    FUZZ_CHECK(json.ok(), "a storable accepted config has a JSON form");
    absl::StatusOr<AcceptedConfig> back = roced::agent::ParseAcceptedJson(*json);
    FUZZ_CHECK(back.ok(), "what the agent writes it reads back");
    FUZZ_CHECK(MessageDifferencer::Equals(*back, *persisted), "and it reads back the same");
  }

  AcceptedConfig same_file;
  same_file.set_source(roced::v1::CONFIG_SOURCE_FILE);
  same_file.set_path("/etc/roced/roced.yaml");
  same_file.set_file_digest(persisted->file_digest());
  same_file.mutable_config()->set_api_version("roced/v1");
  AcceptedConfig edited_file = same_file;
  edited_file.set_file_digest(persisted->file_digest() + "-edited");

  // 2027-01-15 and 1970: deadlines in the input fall on either side.
  for (absl::Time now : {absl::FromUnixSeconds(1800000000), absl::UnixEpoch()}) {
    TakeUp(*persisted, std::nullopt, now);
    TakeUp(*persisted, same_file, now);
    TakeUp(*persisted, edited_file, now);
  }
  return 0;
}

// The Agent's config file path: the file read (LoadConfig, SIGHUP) and, at
// start-up, the choice between it and what the state directory kept
// (agent.h says what each does; config_lifecycle.h decides).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/core/agent.h"
#include "agent/core/config_checks.h"
#include "agent/core/config_lifecycle.h"
#include "util/log.h"

namespace roced::agent {

std::optional<roced::v1::AcceptedConfig> Agent::LoadPersistedLocked() {
  PersistedState loaded = LoadPersistedChecked(state_dir_, options_.paths);
  // Kept even when everything else is rejected: generations never go back.
  accepted_.set_generation(loaded.generation_floor);
  if (!loaded.problems.empty()) {
    startup_problem_ = absl::StrCat(absl::StrJoin(loaded.problems, "; "), "; generations continue from ",
                                    loaded.generation_floor + 1);
  }
  RecordPersist(state_dir_.CheckWritable());
  return loaded.accepted;
}

absl::StatusOr<std::optional<roced::v1::AcceptedConfig>> Agent::ReadConfigFileRecorded() {
  auto file = ReadConfigFile(options_.config_path, options_.config_optional);
  absl::Status rejected = file.status();
  if (file.ok() && *file) {
    if (absl::Status fits = CheckFitsNode(options_.paths, (*file)->config()); !fits.ok()) {
      rejected = absl::InvalidArgumentError(absl::StrCat(options_.config_path, ": ", fits.message()));
    }
  }
  if (!rejected.ok()) {
    metrics_.config_loads->Add({{"result", "error"}}).Increment();
    RecordConfigError(std::string(rejected.message()));
    SetComponentHealth("config", false, "last load rejected; previous config in force");
    return rejected;
  }
  if (*file) metrics_.config_loads->Add({{"result", "success"}}).Increment();
  return file;
}

absl::StatusOr<std::optional<roced::v1::AcceptedConfig>> Agent::ResolveStartupLocked(
    const std::optional<roced::v1::AcceptedConfig>& persisted, const std::optional<roced::v1::AcceptedConfig>& file) {
  std::optional<StartupChoice> choice = ResolveStartupConfig(persisted, file, clock_->Now());
  if (!choice) return file;
  LOG_INFO << "start-up: " << choice->why;
  if (!choice->restore.empty()) restore_.Add("start-up rollback", choice->restore);
  // A resumed config keeps its number; anything else continues from the
  // floor (a lost accepted.json does not take generations back).
  accepted_.set_generation(persisted ? choice->base_generation
                                     : std::max(choice->base_generation, accepted_.generation()));
  return choice->accept;
}

absl::Status Agent::LoadConfig(bool startup) {
  if (options_.config_path.empty()) return absl::OkStatus();
  std::lock_guard<std::mutex> rlock(reconcile_mu_);
  const bool first = startup && accepted_.generation() == 0;
  std::optional<roced::v1::AcceptedConfig> persisted;
  if (first) {
    persisted = LoadPersistedLocked();
    restore_.LoadAtStartup(persisted);
    if (!restore_.empty()) TriggerReconcile("start-up restore");
  }
  absl::StatusOr<std::optional<roced::v1::AcceptedConfig>> next = ReadConfigFileRecorded();
  if (next.ok() && first) next = ResolveStartupLocked(persisted, *next);
  if (!next.ok()) return next.status();
  if (!*next) {
    LOG_WARNING << "config " << options_.config_path
                << " does not exist; running without desired state (nothing managed)";
    SetComponentHealth("config", true, "no config file; nothing is managed");
    return absl::OkStatus();
  }
  if (SameAccepted(accepted_, **next)) {
    published_.ClearConfigError();
  } else if (absl::Status s = Accept(**next, Persist::kBestEffort); !s.ok()) {
    RecordConfigError(std::string(s.message()));
    return s;
  }
  if (!startup) startup_problem_.clear();  // an operator acted since
  ReportStateHealthLocked();
  SetComponentHealth("config", true, "");
  TriggerReconcile(startup ? "start-up" : "config reload");
  return absl::OkStatus();
}

}  // namespace roced::agent

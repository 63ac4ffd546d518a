#include "agent/core/config_checks.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hal/hugepage_pools.h"
#include "model/confirm_policy.h"
#include "model/defaults.h"
#include "model/validate.h"
#include "util/log.h"
#include "util/proto_time.h"
#include "util/status_macros.h"

namespace roced::agent {

absl::Status CheckFitsNode(const hal::Paths& paths, const roced::v1::NodeConfig& config) {
  if (config.hugepages().empty()) return absl::OkStatus();
  absl::StatusOr<uint64_t> memory = hal::MemTotalBytes(paths);
  if (!memory.ok()) {
    LOG_WARNING << "hugepage reservations not checked against the node's memory: " << memory.status().message();
    return absl::OkStatus();
  }
  return model::CheckHugepagesFitMemory(config, *memory);
}

std::vector<std::string> PersistedConfigErrors(const hal::Paths& paths, const roced::v1::AcceptedConfig& accepted) {
  std::vector<std::string> errors;
  for (const roced::v1::NodeConfig* c : {&accepted.config(), &accepted.previous()}) {
    if (c == &accepted.previous() && !accepted.provisional()) continue;
    // Nothing managed (a rollback to before any config): nothing to check.
    if (c->api_version().empty()) continue;
    std::vector<roced::v1::ValidationIssue> issues;
    model::ValidateConfig(*c, nullptr, &issues);
    if (model::HasErrors(issues)) {
      errors.push_back(model::ErrorSummary(issues));
    } else if (absl::Status fits = CheckFitsNode(paths, *c); !fits.ok()) {
      errors.emplace_back(fits.message());
    }
  }
  return errors;
}

PersistedState LoadPersistedChecked(const StateDir& dir, const hal::Paths& paths) {
  PersistedState loaded = dir.LoadPersisted();
  if (!loaded.accepted) return loaded;
  // Validated again: this agent's rules, this node's memory.
  const std::vector<std::string> errors = PersistedConfigErrors(paths, *loaded.accepted);
  if (errors.empty()) return loaded;
  loaded.problems.push_back(dir.SetAsideAccepted(
      absl::StrCat("holds a config that does not validate (", absl::StrJoin(errors, "; "), ")")));
  LOG_ERROR << loaded.problems.back();
  loaded.accepted.reset();
  return loaded;
}

absl::StatusOr<absl::Duration> CheckApplyRequest(const hal::Paths& paths, const roced::v1::ApplyConfigRequest& request,
                                                 std::vector<roced::v1::ValidationIssue>* issues) {
  model::ValidateConfig(request.config(), nullptr, issues);
  if (model::HasErrors(*issues)) {
    return absl::InvalidArgumentError(absl::StrCat("config rejected: ", model::ErrorSummary(*issues)));
  }
  RETURN_IF_ERROR(CheckFitsNode(paths, request.config()));
  const absl::Duration timeout = util::FromProto(request.confirm_timeout());
  if (timeout < absl::ZeroDuration() || timeout > absl::Hours(24)) {
    return absl::InvalidArgumentError("confirm_timeout: allowed 0 (none) to 24h");
  }
  if (!request.has_confirm_policy()) return timeout;
  if (timeout != absl::ZeroDuration()) {
    return absl::InvalidArgumentError("confirm_timeout and confirm_policy: give one, not both");
  }
  RETURN_IF_ERROR(model::ValidateConfirmPolicy(request.confirm_policy()));
  return util::FromProto(request.confirm_policy().window()) + model::defaults::kConfirmPolicyGrace;
}

}  // namespace roced::agent

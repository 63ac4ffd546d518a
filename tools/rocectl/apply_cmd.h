// `rocectl apply -f FILE`: validate a NodeConfig here, send it, print the
// plan and each step's outcome.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "roced/v1/agent.pb.h"
#include "tools/rocectl/commands.h"
#include "util/args.h"

namespace roced::ctl {

struct ApplyFlags {
  std::string file;
  bool dry_run = false;
  absl::Duration confirm_timeout = absl::ZeroDuration();
  std::string expected_generation;  // empty: not checked
  std::string confirm_policy;       // SPEC or FILE; empty: none
};
void RegisterApplyFlags(ApplyFlags* flags, util::ArgParser* parser);
int RunApply(const CommandContext& ctx, const ApplyFlags& flags, const std::vector<std::string>& args);

// Whether the response shows any difference: steps, fields not held or no
// longer managed, a mode change.
bool HasDifference(const roced::v1::ApplyConfigResponse& response);
// apply's exit code: a dry run 1 when there is a difference (as diff(1) and
// `kubectl diff`), else 0; an apply 0 when accepted, 3 when it failed.
int ApplyExitCode(const roced::v1::ApplyConfigResponse& response, bool dry_run);
// Renders an ApplyConfigResponse as a readable diff (every difference, not
// only the steps); `policy` (or null) is the confirm policy the apply was
// sent with.
std::string PlanText(const roced::v1::ApplyConfigResponse& response, bool dry_run,
                     const roced::v1::ConfirmPolicy* policy = nullptr);

// The NodeConfig YAML in `file` ('-': stdin), decoded and validated here so
// that errors point at its lines and columns: the error's message is every
// error found, one a line (model::FormatIssues), or why it cannot be read.
absl::StatusOr<roced::v1::NodeConfig> LoadNodeConfig(const std::string& file);

// --confirm-policy SPEC|FILE: a file's text when `value` names an existing
// file, else a one-line spec (model::ParseConfirmPolicy). Errors name the
// flag.
absl::StatusOr<roced::v1::ConfirmPolicy> LoadConfirmPolicy(const std::string& value);

}  // namespace roced::ctl

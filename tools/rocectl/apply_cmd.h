// `rocectl apply -f FILE`: validate a NodeConfig here, send it, print the
// plan and each step's outcome.
#pragma once

#include <string>
#include <vector>

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
};
void RegisterApplyFlags(ApplyFlags* flags, util::ArgParser* parser);
int RunApply(const CommandContext& ctx, const ApplyFlags& flags, const std::vector<std::string>& args);

// Renders an ApplyConfigResponse as a readable diff.
std::string PlanText(const roced::v1::ApplyConfigResponse& response, bool dry_run);

}  // namespace roced::ctl

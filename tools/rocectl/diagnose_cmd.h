// rocectl diagnose: the agent's findings, errors first, each with what to do.
#pragma once

#include <string>
#include <vector>

#include "roced/v1/agent.pb.h"
#include "tools/rocectl/commands.h"
#include "util/args.h"

namespace roced::ctl {

struct DiagnoseFlags {
  std::string checks;  // comma-separated check names; empty: all
};
void RegisterDiagnoseFlags(DiagnoseFlags* flags, util::ArgParser* parser);

// Exit status (commands.h's table): 0 when no finding is an error, 1 when
// one is or no check ran, 2 on usage errors (an unknown check), 3 when the
// call failed.
int RunDiagnose(const CommandContext& ctx, const DiagnoseFlags& flags, const std::vector<std::string>& args);
int DiagnoseExitCode(const roced::v1::DiagnoseResponse& response);

// The findings as on-call reads them: the skipped checks with why, one
// block per finding with severity, check, object and summary, then the
// detail and the remedy; a last line counting them by severity and the
// checks that ran. "passed" only for checks that ran.
std::string DiagnoseText(const roced::v1::DiagnoseResponse& response);

}  // namespace roced::ctl

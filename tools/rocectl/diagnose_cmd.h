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

// Exit status: 0 when no finding is an error, 1 when one is (or the call
// failed), 2 on usage errors.
int RunDiagnose(const CommandContext& ctx, const DiagnoseFlags& flags, const std::vector<std::string>& args);

// The findings as on-call reads them: one block per finding with severity,
// check, object and summary, then the detail and the remedy; a last line
// counting them by severity.
std::string DiagnoseText(const roced::v1::DiagnoseResponse& response);

}  // namespace roced::ctl

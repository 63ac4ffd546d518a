// `rocectl status`: the node as the agent sees it (GetState).
#include <iostream>

#include "tools/rocectl/call.h"
#include "tools/rocectl/commands.h"

namespace roced::ctl {

bool NoArguments(absl::string_view command, const std::vector<std::string>& args) {
  if (args.empty()) return true;
  std::cerr << "rocectl: " << command << " takes no arguments (got '" << args[0] << "')\n";
  return false;
}

grpc::Status FetchState(const CommandContext& ctx, roced::v1::NodeState* state) {
  return CallAgent(ctx.channel, ctx.timeout, &roced::v1::Agent::Stub::GetState, roced::v1::GetStateRequest(), state);
}

namespace {

int RunStatus(const CommandContext& ctx, const std::vector<std::string>& args) {
  if (!NoArguments("status", args)) return kExitUsage;
  roced::v1::NodeState state;
  grpc::Status status = FetchState(ctx, &state);
  if (!status.ok()) return FailRpc(ctx, status);
  Print(ctx.output, state, [&] { return StatusTable(state); });
  return kExitOk;
}

}  // namespace

CommandRun BindStatus(util::ArgParser*) { return RunStatus; }

}  // namespace roced::ctl

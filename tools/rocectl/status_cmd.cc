// `rocectl status`: the node as the agent sees it (GetState).
#include <iostream>

#include "roced/v1/agent.grpc.pb.h"
#include "tools/rocectl/commands.h"

namespace roced::ctl {

bool NoArguments(absl::string_view command, const std::vector<std::string>& args) {
  if (args.empty()) return true;
  std::cerr << "rocectl: " << command << " takes no arguments (got '" << args[0] << "')\n";
  return false;
}

grpc::Status FetchState(const CommandContext& ctx, roced::v1::NodeState* state) {
  auto stub = roced::v1::Agent::NewStub(ctx.channel);
  grpc::ClientContext call;
  call.set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(ctx.timeout));
  return stub->GetState(&call, roced::v1::GetStateRequest(), state);
}

namespace {

int RunStatus(const CommandContext& ctx, const std::vector<std::string>& args) {
  if (!NoArguments("status", args)) return kExitUsage;
  roced::v1::NodeState state;
  grpc::Status status = FetchState(ctx, &state);
  if (!status.ok()) return FailRpc(ctx, status);
  switch (ctx.output) {
    case Output::kTable: std::cout << StatusTable(state); break;
    case Output::kJson: std::cout << ToJson(state); break;
    case Output::kYaml: std::cout << ToYaml(state); break;
  }
  return kExitOk;
}

}  // namespace

CommandRun BindStatus(util::ArgParser*) { return RunStatus; }

}  // namespace roced::ctl

// `rocectl status`: the node as the agent sees it (GetState).
#include <iostream>

#include "roced/v1/agent.grpc.pb.h"
#include "tools/rocectl/commands.h"

namespace roced::ctl {

namespace {

int RunStatus(const CommandContext& ctx, const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "rocectl: status takes no arguments (got '" << args[0] << "')\n";
    return kExitUsage;
  }
  auto stub = roced::v1::Agent::NewStub(ctx.channel);
  grpc::ClientContext call;
  call.set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(ctx.timeout));
  roced::v1::NodeState state;
  grpc::Status status = stub->GetState(&call, roced::v1::GetStateRequest(), &state);
  if (!status.ok()) {
    std::cerr << "rocectl: " << DescribeRpcError(status, ctx.where) << "\n";
    return kExitError;
  }
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

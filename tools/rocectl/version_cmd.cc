// `rocectl version`: rocectl's version and, when reachable, the agent's
// (exit 1 when it is not).
#include <iostream>

#include "absl/strings/str_cat.h"
#include "roced/v1/agent.grpc.pb.h"
#include "roced/version.h"
#include "tools/rocectl/commands.h"

namespace roced::ctl {

namespace {

int RunVersion(const CommandContext& ctx, const std::vector<std::string>& args) {
  if (!NoArguments("version", args)) return kExitUsage;
  roced::v1::NodeState state;
  grpc::Status status = FetchState(ctx, &state);
  if (ctx.output == Output::kTable) {
    std::string agent = status.ok() ? absl::StrCat(state.agent().version(), " (commit ",
                                                     state.agent().git_commit(), ")")
                                    : "unreachable: " + DescribeRpcError(status, ctx);
    std::cout << "rocectl " << roced::kVersion << " (commit " << roced::kGitCommit << ")\n"
              << "roced   " << agent << "\n";
  } else {
    roced::v1::AgentInfo client;
    client.set_version(roced::kVersion);
    client.set_git_commit(roced::kGitCommit);
    std::string doc = absl::StrCat("{\"client\": ", ToJson(client), ", \"agent\": ",
                                   status.ok() ? ToJson(state.agent()) : "null", "}\n");
    std::cout << (ctx.output == Output::kJson ? doc : JsonToYaml(doc));
  }
  return status.ok() ? kExitOk : kExitFailed;
}

}  // namespace

CommandRun BindVersion(util::ArgParser*) { return RunVersion; }

}  // namespace roced::ctl

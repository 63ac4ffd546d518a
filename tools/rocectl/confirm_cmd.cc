// The two ends of a provisional config: `rocectl confirm [GENERATION]`
// makes it permanent, `rocectl rollback [GENERATION]` returns from it now.
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "roced/v1/agent.grpc.pb.h"
#include "tools/rocectl/call.h"
#include "tools/rocectl/commands.h"

namespace roced::ctl {

namespace {

// [GENERATION] into `generation`; false after the usage error.
bool GenerationArg(const std::string& command, const std::vector<std::string>& args, uint64_t* generation) {
  if (args.size() > 1) {
    std::cerr << "rocectl: usage: rocectl " << command << " [GENERATION]\n";
    return false;
  }
  if (!args.empty() && !absl::SimpleAtoi(args[0], generation)) {
    std::cerr << "rocectl: " << command << ": '" << args[0] << "' is not a generation number\n";
    return false;
  }
  return true;
}

int RunConfirm(const CommandContext& ctx, const std::vector<std::string>& args) {
  roced::v1::ConfirmConfigRequest req;
  uint64_t g = 0;
  if (!GenerationArg("confirm", args, &g)) return kExitUsage;
  req.set_generation(g);
  roced::v1::ConfirmConfigResponse resp;
  grpc::Status st = CallAgent(ctx.channel, ctx.timeout, &roced::v1::Agent::Stub::ConfirmConfig, req, &resp);
  if (!st.ok()) return FailRpc(ctx, st);
  Print(ctx.output, resp, [&] { return absl::StrCat("Generation ", resp.generation(), " confirmed.\n"); });
  return kExitOk;
}

int RunRollback(const CommandContext& ctx, const std::vector<std::string>& args) {
  roced::v1::RollbackConfigRequest req;
  uint64_t g = 0;
  if (!GenerationArg("rollback", args, &g)) return kExitUsage;
  req.set_generation(g);
  roced::v1::RollbackConfigResponse resp;
  grpc::Status st = CallAgent(ctx.channel, ctx.timeout, &roced::v1::Agent::Stub::RollbackConfig, req, &resp);
  if (!st.ok()) return FailRpc(ctx, st);
  Print(ctx.output, resp, [&] {
    return absl::StrCat("Provisional generation ", resp.rollback().generation(),
                        " rolled back: its previous config is in force again as generation ",
                        resp.rollback().returned_to(), ".\n");
  });
  return kExitOk;
}

}  // namespace

CommandRun BindConfirm(util::ArgParser*) { return RunConfirm; }
CommandRun BindRollback(util::ArgParser*) { return RunRollback; }

}  // namespace roced::ctl

// The two ends of a provisional config: `rocectl confirm [GENERATION]`
// makes it permanent, `rocectl rollback [GENERATION]` returns from it now.
#include <iostream>

#include "absl/strings/numbers.h"
#include "roced/v1/agent.grpc.pb.h"
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

grpc::ClientContext* WithDeadline(const CommandContext& ctx, grpc::ClientContext* cctx) {
  cctx->set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(ctx.timeout));
  return cctx;
}

int RunConfirm(const CommandContext& ctx, const std::vector<std::string>& args) {
  roced::v1::ConfirmConfigRequest req;
  uint64_t g = 0;
  if (!GenerationArg("confirm", args, &g)) return kExitUsage;
  req.set_generation(g);
  grpc::ClientContext cctx;
  roced::v1::ConfirmConfigResponse resp;
  grpc::Status st = roced::v1::Agent::NewStub(ctx.channel)->ConfirmConfig(WithDeadline(ctx, &cctx), req, &resp);
  if (!st.ok()) return FailRpc(ctx, st);
  if (ctx.output == Output::kTable) {
    std::cout << "Generation " << resp.generation() << " confirmed.\n";
  } else {
    std::cout << (ctx.output == Output::kJson ? ToJson(resp) : ToYaml(resp));
  }
  return kExitOk;
}

int RunRollback(const CommandContext& ctx, const std::vector<std::string>& args) {
  roced::v1::RollbackConfigRequest req;
  uint64_t g = 0;
  if (!GenerationArg("rollback", args, &g)) return kExitUsage;
  req.set_generation(g);
  grpc::ClientContext cctx;
  roced::v1::RollbackConfigResponse resp;
  grpc::Status st = roced::v1::Agent::NewStub(ctx.channel)->RollbackConfig(WithDeadline(ctx, &cctx), req, &resp);
  if (!st.ok()) return FailRpc(ctx, st);
  if (ctx.output == Output::kTable) {
    std::cout << "Provisional generation " << resp.rollback().generation()
              << " rolled back: its previous config is in force again as generation "
              << resp.rollback().returned_to() << ".\n";
  } else {
    std::cout << (ctx.output == Output::kJson ? ToJson(resp) : ToYaml(resp));
  }
  return kExitOk;
}

}  // namespace

CommandRun BindConfirm(util::ArgParser*) { return RunConfirm; }
CommandRun BindRollback(util::ArgParser*) { return RunRollback; }

}  // namespace roced::ctl

// `rocectl confirm [GENERATION]`: make a provisional config (applied with
// --confirm-timeout) permanent.
#include <iostream>

#include "absl/strings/numbers.h"
#include "roced/v1/agent.grpc.pb.h"
#include "tools/rocectl/commands.h"

namespace roced::ctl {

namespace {

int RunConfirm(const CommandContext& ctx, const std::vector<std::string>& args) {
  roced::v1::ConfirmConfigRequest req;
  if (args.size() > 1) {
    std::cerr << "rocectl: usage: rocectl confirm [GENERATION]\n";
    return 2;
  }
  if (!args.empty()) {
    uint64_t g;
    if (!absl::SimpleAtoi(args[0], &g)) {
      std::cerr << "rocectl: confirm: '" << args[0] << "' is not a generation number\n";
      return 2;
    }
    req.set_generation(g);
  }
  auto stub = roced::v1::Agent::NewStub(ctx.channel);
  grpc::ClientContext cctx;
  cctx.set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(ctx.timeout));
  roced::v1::ConfirmConfigResponse resp;
  grpc::Status st = stub->ConfirmConfig(&cctx, req, &resp);
  if (!st.ok()) return FailRpc(ctx, st);
  if (ctx.output == Output::kTable) {
    std::cout << "Generation " << resp.generation() << " confirmed.\n";
  } else {
    std::cout << (ctx.output == Output::kJson ? ToJson(resp) : ToYaml(resp));
  }
  return kExitOk;
}

}  // namespace

CommandRun BindConfirm(util::ArgParser*) { return RunConfirm; }

}  // namespace roced::ctl

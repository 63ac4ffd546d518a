// `rocectl get config`: the config in force as NodeConfig YAML, in the form
// `rocectl apply -f` takes back (GetState's config.desired, encoded as the
// config file is written, not as the proto's YAML mapping that `status -o
// yaml` prints).
#include <iostream>

#include "absl/strings/str_cat.h"
#include "model/config_yaml.h"
#include "tools/rocectl/commands.h"

namespace roced::ctl {

namespace {

int RunGet(const CommandContext& ctx, const std::vector<std::string>& args) {
  if (args.size() != 1 || args[0] != "config") {
    std::cerr << "rocectl: usage: rocectl get config (the one thing get prints; got '"
              << (args.empty() ? "" : args[0]) << "')\n";
    return kExitUsage;
  }
  roced::v1::NodeState state;
  grpc::Status status = FetchState(ctx, &state);
  if (!status.ok()) return FailRpc(ctx, status);
  if (state.config().generation() == 0) {
    return Fail(ctx, absl::StrCat("the agent at ", ctx.where, " has no accepted config yet"));
  }
  switch (ctx.output) {
    case Output::kTable:
    case Output::kYaml:
      std::cout << "# generation " << state.config().generation() << " from " << ctx.where << "\n"
                << model::EncodeYamlConfig(state.config().desired());
      break;
    case Output::kJson: std::cout << ToJson(state.config().desired()); break;
  }
  return kExitOk;
}

}  // namespace

CommandRun BindGet(util::ArgParser*) { return RunGet; }

}  // namespace roced::ctl

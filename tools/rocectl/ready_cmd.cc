// `rocectl ready`: whether the node is ready (model::ReadinessOf over
// GetState, the rule the agent's /readyz answers by), each check with why.
// Exit 0 ready, 1 not ready or the agent unreachable: an exec readiness
// probe over the unix socket, for agents whose /metrics port asks for
// client certificates.
#include <google/protobuf/struct.pb.h>

#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "model/readiness.h"
#include "roced/v1/agent.grpc.pb.h"
#include "tools/rocectl/commands.h"
#include "tools/rocectl/format.h"

namespace roced::ctl {

namespace {

// {"ready": bool, "checks": [{"name", "ok", "detail"}, ...]}
google::protobuf::Struct ReadinessDoc(const model::Readiness& r) {
  google::protobuf::Struct doc;
  (*doc.mutable_fields())["ready"].set_bool_value(r.ready);
  auto* checks = (*doc.mutable_fields())["checks"].mutable_list_value();
  for (const auto& c : r.checks) {
    auto* fields = checks->add_values()->mutable_struct_value()->mutable_fields();
    (*fields)["name"].set_string_value(c.name);
    (*fields)["ok"].set_bool_value(c.ok);
    (*fields)["detail"].set_string_value(c.detail);
  }
  return doc;
}

int RunReady(const CommandContext& ctx, const std::vector<std::string>& args) {
  if (!NoArguments("ready", args)) return kExitUsage;
  roced::v1::NodeState state;
  grpc::Status status = FetchState(ctx, &state);
  if (!status.ok()) return FailRpc(ctx, status);
  const model::Readiness r = model::ReadinessOf(state, absl::Now());
  if (ctx.output == Output::kTable) {
    for (const auto& c : r.checks) {
      std::cout << (c.ok ? "[+] " : "[-] ") << c.name << (c.ok ? " ok: " : " failed: ") << c.detail << "\n";
    }
    std::cout << (r.ready ? "ready\n" : "not ready\n");
  } else {
    const std::string doc = ToJson(ReadinessDoc(r));
    std::cout << (ctx.output == Output::kJson ? doc : JsonToYaml(doc));
  }
  return r.ready ? kExitOk : kExitFindings;
}

}  // namespace

CommandRun BindReady(util::ArgParser*) { return RunReady; }

}  // namespace roced::ctl

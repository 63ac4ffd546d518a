// rocectl subcommands beyond status/version. Each returns the process exit
// code (0 ok, 1 failed, 2 usage).
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "roced/v1/agent.pb.h"
#include "tools/rocectl/format.h"
#include "util/args.h"

namespace roced::ctl {

struct CommandContext {
  std::string where;  // target as shown in messages
  Output output = Output::kTable;
  absl::Duration timeout = absl::Seconds(10);
  std::shared_ptr<grpc::Channel> channel;
};

// One line saying why an RPC failed, for people.
std::string DescribeRpcError(const grpc::Status& status, const std::string& where);

struct ApplyFlags {
  std::string file;
  bool dry_run = false;
  absl::Duration confirm_timeout = absl::ZeroDuration();
  std::string expected_generation;  // empty: not checked
};
void RegisterApplyFlags(ApplyFlags* flags, util::ArgParser* parser);
int RunApply(const CommandContext& ctx, const ApplyFlags& flags, const std::vector<std::string>& args);
int RunConfirm(const CommandContext& ctx, const std::vector<std::string>& args);

// Renders an ApplyConfigResponse as a readable diff.
std::string PlanText(const roced::v1::ApplyConfigResponse& response, bool dry_run);

}  // namespace roced::ctl

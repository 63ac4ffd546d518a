#include <google/protobuf/struct.pb.h>

#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tools/rocectl/commands.h"

namespace roced::ctl {

namespace {

// What gRPC's client says when it cannot reach the server or lost the
// connection, as opposed to an UNAVAILABLE the agent itself answered
// ("cannot persist the accepted config: ...", "agent is stopping").
bool TransportFailure(absl::string_view msg) {
  for (absl::string_view marker :
       {"failed to connect", "Failed to connect", "connections to all backends failing", "Connection refused",
        "Connection reset", "Socket closed", "Broken pipe", "No such file or directory", "DNS resolution failed",
        "empty address list", "Network is unreachable", "No route to host", "handshake", "Handshake",
        "Connection timed out", "GOAWAY", "Cancelling all calls", "Endpoint closing"}) {
    if (absl::StrContains(msg, marker)) return true;
  }
  return msg.empty();
}

}  // namespace

std::string DescribeRpcError(const grpc::Status& s, const std::string& where) {
  std::string msg = s.error_message();
  switch (s.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      if (absl::StrContains(msg, "Permission denied")) {
        return absl::StrCat("permission denied on ", where,
                            " (run as root or as a member of the socket's group)");
      }
      if (!TransportFailure(msg)) return absl::StrCat("the agent at ", where, " cannot do this now: ", msg);
      return absl::StrCat("agent not reachable at ", where, ": ", msg);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return absl::StrCat("agent at ", where, " did not answer in time");
    case grpc::StatusCode::PERMISSION_DENIED:
      return absl::StrCat("permission denied by the agent at ", where, ": ", msg);
    case grpc::StatusCode::UNAUTHENTICATED:
      return absl::StrCat("the agent at ", where, " did not accept us as a caller: ", msg,
                          " (give --cert/--key, or set ROCECTL_CERT/ROCECTL_KEY)");
    case grpc::StatusCode::UNIMPLEMENTED:
      return absl::StrCat("the agent at ", where, " does not support this: ", msg);
    default:
      return absl::StrCat(msg, " (", where, ")");
  }
}

std::string DescribeRpcError(const grpc::Status& s, const CommandContext& ctx) {
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE && ctx.explain_unavailable) {
    if (std::string why = ctx.explain_unavailable(s); !why.empty()) {
      return absl::StrCat("cannot talk to the agent at ", ctx.where, ": ", why);
    }
  }
  return DescribeRpcError(s, ctx.where);
}

std::string FailureText(Output output, absl::string_view message, int exit_code, absl::string_view grpc_code) {
  if (output == Output::kTable) return absl::StrCat("rocectl: ", message, "\n");
  google::protobuf::Struct doc;
  auto& error = *(*doc.mutable_fields())["error"].mutable_struct_value()->mutable_fields();
  error["message"].set_string_value(std::string(message));
  error["exitCode"].set_number_value(exit_code);
  if (!grpc_code.empty()) error["grpcCode"].set_string_value(std::string(grpc_code));
  return output == Output::kJson ? ToJson(doc) : ToYaml(doc);
}

int Fail(const CommandContext& ctx, absl::string_view message, int exit_code) {
  const std::string text = FailureText(ctx.output, message, exit_code, "");
  (ctx.output == Output::kTable ? std::cerr : std::cout) << text;
  return exit_code;
}

int FailRpc(const CommandContext& ctx, const grpc::Status& status) {
  static constexpr absl::string_view kCodes[] = {
      "OK",           "CANCELLED",         "UNKNOWN",        "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
      "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
      "OUT_OF_RANGE", "UNIMPLEMENTED",     "INTERNAL",       "UNAVAILABLE",      "DATA_LOSS",         "UNAUTHENTICATED"};
  const int code = static_cast<int>(status.error_code());
  const absl::string_view name = code >= 0 && code < 17 ? kCodes[code] : "UNKNOWN";
  const std::string text = FailureText(ctx.output, DescribeRpcError(status, ctx), kExitFailed, name);
  (ctx.output == Output::kTable ? std::cerr : std::cout) << text;
  return kExitFailed;
}

}  // namespace roced::ctl

// rocectl's one way to talk to an agent: a unary Agent method on a channel
// within a deadline, and an answer printed as -o asks. Every command calls
// through these, so a deadline or a stub is built in one place.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "roced/v1/agent.grpc.pb.h"
#include "tools/rocectl/format.h"

namespace roced::ctl {

struct CommandContext;

// The point in time a call started now must be done by.
std::chrono::system_clock::time_point DeadlineIn(absl::Duration timeout);

// A unary method of the Agent service, e.g. &roced::v1::Agent::Stub::GetState.
template <typename Request, typename Response>
using AgentMethod = grpc::Status (roced::v1::Agent::Stub::*)(grpc::ClientContext*, const Request&, Response*);

// Calls `method` on the agent at `channel`; the call is cancelled when it
// has not answered within `timeout`.
template <typename Request, typename Response>
grpc::Status CallAgent(const std::shared_ptr<grpc::Channel>& channel, absl::Duration timeout,
                       AgentMethod<Request, Response> method, const Request& request, Response* response) {
  roced::v1::Agent::Stub stub(channel);
  grpc::ClientContext call;
  call.set_deadline(DeadlineIn(timeout));
  return (stub.*method)(&call, request, response);
}

// `text` under -o table; the message as JSON or YAML otherwise. On stdout.
void Print(Output output, const google::protobuf::Message& message, absl::FunctionRef<std::string()> text);

}  // namespace roced::ctl

#include "agent/agent_service.h"

#include "absl/strings/str_cat.h"
#include "model/validate.h"
#include "util/escape.h"
#include "util/log.h"

namespace roced::agent {

namespace {
grpc::Status ToGrpc(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

// What an ApplyConfig request must pass before the agent looks at any
// entry of it: the config's count caps and a normalized confirm_timeout.
absl::Status CheckApplyBounds(const roced::v1::ApplyConfigRequest& request) {
  std::vector<roced::v1::ValidationIssue> issues;
  if (!model::CheckConfigBounds(request.config(), &issues)) {
    return absl::InvalidArgumentError(absl::StrCat("config rejected: ", model::ErrorSummary(issues)));
  }
  if (std::optional<std::string> problem = model::DurationProblem(request.confirm_timeout())) {
    return absl::InvalidArgumentError(absl::StrCat("confirm_timeout: ", *problem));
  }
  return absl::OkStatus();
}

// A name a caller sends (a filter, a check name): at most `max` bytes, no
// control characters, so that errors and logs quoting it stay one short line.
absl::Status CheckName(const std::string& field, const std::string& name, size_t max) {
  if (name.size() > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", name.size(), " bytes long; allowed at most ", max));
  }
  for (unsigned char ch : name) {
    if (ch < 0x20 || ch == 0x7f) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": ", util::Quoted(name), " has a control character"));
    }
  }
  return absl::OkStatus();
}

// RDMA device names (IB_DEVICE_NAME_MAX 64 with the NUL), netdev names
// (IFNAMSIZ 16 with the NUL), check names (the longest is under 40).
constexpr size_t kMaxDeviceName = 63;
constexpr size_t kMaxNetdevName = 15;
constexpr size_t kMaxCheckName = 64;
}  // namespace

grpc::Status AgentService::ApplyConfig(grpc::ServerContext* context,
                                       const roced::v1::ApplyConfigRequest* request,
                                       roced::v1::ApplyConfigResponse* response) {
  if (absl::Status bounds = CheckApplyBounds(*request); !bounds.ok()) {
    LOG_WARNING << "ApplyConfig from " << util::EscapeForLog(context->peer()) << " refused: "
                << util::EscapeForLog(bounds.message(), 1024);
    return ToGrpc(bounds);
  }
  auto result = agent_->ApplyConfig(*request);
  if (!result.ok()) return ToGrpc(result.status());
  *response = *std::move(result);
  return grpc::Status::OK;
}

grpc::Status AgentService::ConfirmConfig(grpc::ServerContext*,
                                         const roced::v1::ConfirmConfigRequest* request,
                                         roced::v1::ConfirmConfigResponse* response) {
  auto generation = agent_->ConfirmConfig(request->generation());
  if (!generation.ok()) return ToGrpc(generation.status());
  response->set_generation(*generation);
  return grpc::Status::OK;
}

grpc::Status AgentService::GetState(grpc::ServerContext*, const roced::v1::GetStateRequest*,
                                    roced::v1::NodeState* response) {
  *response = agent_->State();
  if (probes_ != nullptr) {
    for (auto& summary : probes_->Summaries()) *response->add_probes() = std::move(summary);
  }
  return grpc::Status::OK;
}

grpc::Status AgentService::WatchState(grpc::ServerContext* context,
                                      const roced::v1::WatchStateRequest* request,
                                      grpc::ServerWriter<roced::v1::StateEvent>* writer) {
  // Subscribe before taking the snapshot so no change falls between them.
  auto sub = agent_->Subscribe();
  if (sub == nullptr) {
    LOG_WARNING << "WatchState from " << util::EscapeForLog(context->peer()) << " refused: "
                << EventBus::kMaxSubscribers << " streams are open";
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        absl::StrCat("too many WatchState streams: at most ", EventBus::kMaxSubscribers,
                                     " may be open at once"));
  }
  if (!request->skip_initial_state()) {
    roced::v1::StateEvent first;
    *first.mutable_state() = agent_->State();
    *first.mutable_at() = first.state().observed_at();
    if (!writer->Write(first)) {
      agent_->Unsubscribe(sub);
      return grpc::Status::OK;
    }
  }
  roced::v1::StateEvent event;
  while (!context->IsCancelled() && !shutting_down_.load() && !sub->closed()) {
    if (!sub->Next(&event, absl::Milliseconds(250))) continue;
    if (!writer->Write(event)) break;
  }
  agent_->Unsubscribe(sub);
  if (shutting_down_.load()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "agent is stopping");
  return grpc::Status::OK;
}

grpc::Status AgentService::GetCounters(grpc::ServerContext*,
                                       const roced::v1::GetCountersRequest* request,
                                       roced::v1::GetCountersResponse* response) {
  if (counters_ == nullptr) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "counters not ready");
  }
  if (absl::Status s = CheckName("device", request->device(), kMaxDeviceName); !s.ok()) return ToGrpc(s);
  if (absl::Status s = CheckName("netdev", request->netdev(), kMaxNetdevName); !s.ok()) return ToGrpc(s);
  absl::StatusOr<roced::v1::GetCountersResponse> counters = counters_->GetCounters(*request);
  // absl and gRPC status codes share their numbering.
  if (!counters.ok()) {
    return grpc::Status(static_cast<grpc::StatusCode>(counters.status().code()),
                        std::string(counters.status().message()));
  }
  *response = *std::move(counters);
  return grpc::Status::OK;
}

grpc::Status AgentService::Diagnose(grpc::ServerContext*, const roced::v1::DiagnoseRequest* request,
                                    roced::v1::DiagnoseResponse* response) {
  // Each check runs once whatever the request repeats; more names than
  // there are checks is a malformed request.
  const size_t max_checks = diagnose::Checks().size();
  if (static_cast<size_t>(request->checks_size()) > max_checks) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("checks: ", request->checks_size(), " names; allowed at most ",
                                     max_checks, " (one per check)"));
  }
  for (int i = 0; i < request->checks_size(); ++i) {
    absl::Status s = CheckName(absl::StrCat("checks[", i, "]"), request->checks(i), kMaxCheckName);
    if (!s.ok()) return ToGrpc(s);
  }
  diagnose::Inputs in = agent_->DiagnoseInputs();
  if (probes_ != nullptr) {
    for (const auto& s : probes_->Summaries()) *in.state.add_probes() = s;
  }
  auto findings = diagnose::Run(in, std::vector<std::string>(request->checks().begin(), request->checks().end()));
  if (!findings.ok()) return ToGrpc(findings.status());
  for (auto& f : *findings) *response->add_findings() = std::move(f);
  return grpc::Status::OK;
}

}  // namespace roced::agent

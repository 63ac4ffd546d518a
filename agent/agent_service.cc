#include "agent/agent_service.h"

namespace roced::agent {

namespace {
grpc::Status ToGrpc(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}
}  // namespace

grpc::Status AgentService::ApplyConfig(grpc::ServerContext*, const roced::v1::ApplyConfigRequest* request,
                                       roced::v1::ApplyConfigResponse* response) {
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

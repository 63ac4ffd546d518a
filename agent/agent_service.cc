#include "agent/agent_service.h"

namespace roced::agent {

grpc::Status AgentService::GetState(grpc::ServerContext*, const roced::v1::GetStateRequest*,
                                    roced::v1::NodeState* response) {
  *response = agent_->State();
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

}  // namespace roced::agent

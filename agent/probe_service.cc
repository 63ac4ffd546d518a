// ProbePeer handlers, and the probe RPCs of AgentService (declared in
// agent_service.h, kept here with the rest of the probe front end).
#include "agent/probe_service.h"

#include "agent/agent_service.h"

namespace roced::agent {

namespace {
// absl and gRPC status codes share their numbering.
grpc::Status ToGrpc(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}
grpc::Status NotReady() { return grpc::Status(grpc::StatusCode::UNAVAILABLE, "probes not ready"); }
}  // namespace

grpc::Status ProbePeerService::OpenEndpoint(grpc::ServerContext*,
                                            const roced::v1::OpenEndpointRequest* request,
                                            roced::v1::OpenEndpointResponse* response) {
  if (runtime_ == nullptr) return NotReady();
  absl::StatusOr<roced::v1::OpenEndpointResponse> opened = runtime_->OpenEndpoint(*request);
  if (!opened.ok()) return ToGrpc(opened.status());
  *response = *std::move(opened);
  return grpc::Status::OK;
}

grpc::Status ProbePeerService::CloseEndpoint(grpc::ServerContext*,
                                             const roced::v1::CloseEndpointRequest* request,
                                             roced::v1::CloseEndpointResponse*) {
  if (runtime_ == nullptr) return NotReady();
  return ToGrpc(runtime_->CloseEndpoint(request->endpoint_id()));
}

grpc::Status AgentService::RunProbe(grpc::ServerContext*, const roced::v1::RunProbeRequest* request,
                                    roced::v1::ProbeResult* response) {
  if (probes_ == nullptr) return NotReady();
  absl::StatusOr<roced::v1::ProbeResult> result = probes_->RunProbe(*request);
  if (!result.ok()) return ToGrpc(result.status());
  *response = *std::move(result);
  return grpc::Status::OK;
}

grpc::Status AgentService::ListProbeResults(grpc::ServerContext*,
                                            const roced::v1::ListProbeResultsRequest* request,
                                            roced::v1::ListProbeResultsResponse* response) {
  if (probes_ == nullptr) return NotReady();
  for (auto& r : probes_->ListResults(*request)) *response->add_results() = std::move(r);
  return grpc::Status::OK;
}

}  // namespace roced::agent

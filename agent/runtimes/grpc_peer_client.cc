#include "agent/runtimes/grpc_peer_client.h"

#include "roced/v1/peer.grpc.pb.h"

namespace roced::agent {

namespace {

void SetDeadline(grpc::ClientContext* ctx, absl::Time deadline) {
  ctx->set_deadline(absl::ToChronoTime(deadline));
}

// absl and gRPC status codes share their numbering.
absl::Status FromGrpc(const grpc::Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

}  // namespace

std::shared_ptr<grpc::Channel> GrpcPeerClient::Channel(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = channels_.find(address);
  if (it != channels_.end()) return it->second;
  if (channels_.size() >= 64) channels_.clear();
  grpc::ChannelArguments args;
  // A peer that comes back is probed again within seconds, not after
  // gRPC's default reconnect backoff of up to two minutes. (The minimum is
  // left alone: gRPC also uses it as the connect timeout, and a slow
  // handshake must not fail before open_timeout.)
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 500);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  auto channel = grpc::CreateCustomChannel(address, credentials_, args);
  channels_[address] = channel;
  return channel;
}

namespace {

// One unary call on `channel` with `deadline`; gRPC errors as absl::Status.
template <typename Service, typename Request, typename Response>
absl::StatusOr<Response> Unary(const std::shared_ptr<grpc::Channel>& channel, absl::Time deadline,
                               grpc::Status (Service::Stub::*method)(grpc::ClientContext*, const Request&,
                                                                     Response*),
                               const Request& request) {
  auto stub = Service::NewStub(channel);
  grpc::ClientContext ctx;
  SetDeadline(&ctx, deadline);
  Response response;
  if (grpc::Status s = ((*stub).*method)(&ctx, request, &response); !s.ok()) return FromGrpc(s);
  return response;
}

}  // namespace

absl::StatusOr<roced::v1::OpenEndpointResponse> GrpcPeerClient::OpenEndpoint(
    const std::string& address, const roced::v1::OpenEndpointRequest& request, absl::Time deadline) {
  return Unary<roced::v1::ProbePeer>(Channel(address), deadline, &roced::v1::ProbePeer::Stub::OpenEndpoint,
                                     request);
}

absl::StatusOr<roced::v1::CloseEndpointResponse> GrpcPeerClient::CloseEndpoint(
    const std::string& address, const roced::v1::CloseEndpointRequest& request, absl::Time deadline) {
  return Unary<roced::v1::ProbePeer>(Channel(address), deadline, &roced::v1::ProbePeer::Stub::CloseEndpoint,
                                     request);
}

absl::StatusOr<roced::v1::GetCountersResponse> GrpcPeerClient::GetCounters(
    const std::string& address, const roced::v1::GetCountersRequest& request, absl::Time deadline) {
  return Unary<roced::v1::ProbePeer>(Channel(address), deadline, &roced::v1::ProbePeer::Stub::GetCounters,
                                     request);
}

}  // namespace roced::agent

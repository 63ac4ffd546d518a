// probe::PeerClient over gRPC: the ProbePeer service of the peer agent at a
// host:port, over the credentials the agent's own listener uses (mutual
// TLS with the agent's certificate, or plaintext under --insecure), one
// cached channel per address.
//
// Threads: thread-safe; any number of probes call at once. The channel
// cache's mutex is a leaf.
#pragma once

#include <grpcpp/grpcpp.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "probe/peer_client.h"

namespace roced::agent {

class GrpcPeerClient final : public probe::PeerClient {
 public:
  // Null credentials: plaintext.
  explicit GrpcPeerClient(std::shared_ptr<grpc::ChannelCredentials> credentials)
      : credentials_(credentials ? std::move(credentials) : grpc::InsecureChannelCredentials()) {}

  absl::StatusOr<roced::v1::OpenEndpointResponse> OpenEndpoint(
      const std::string& address, const roced::v1::OpenEndpointRequest& request,
      absl::Time deadline) override;
  absl::StatusOr<roced::v1::CloseEndpointResponse> CloseEndpoint(
      const std::string& address, const roced::v1::CloseEndpointRequest& request,
      absl::Time deadline) override;
  absl::StatusOr<roced::v1::GetCountersResponse> GetCounters(
      const std::string& address, const roced::v1::GetCountersRequest& request,
      absl::Time deadline) override;

 private:
  // The channel to `address`, created on first use. At most 64 are kept
  // (addresses given directly to RunProbe could grow the cache without
  // bound): the 65th clears it.
  std::shared_ptr<grpc::Channel> Channel(const std::string& address) ABSL_LOCKS_EXCLUDED(mu_);

  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_ ABSL_GUARDED_BY(mu_);
};

}  // namespace roced::agent

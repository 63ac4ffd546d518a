// The fleet mesh's membership, apart from its probing: who the members are
// and where each peer's mesh responders are.
//
// Members come from the inventory file (--mesh-inventory, lib/mesh/inventory),
// parsed again when its modification time changes, or from a DNS name that
// resolves to every agent (a Kubernetes headless Service over the
// DaemonSet), each address asked Describe for who it is
// (lib/mesh/membership keeps the answers). A peer's responders (its rails,
// one UD QP per RoCE port) come from its ProbePeer.Describe, which must
// name the peer the membership says is at that address.
//
// Threads: not thread-safe. MeshRuntime's members thread ("roced-mesh-mem")
// is its one user; Describe calls block up to 2 s each.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "mesh/membership.h"
#include "mesh/prober.h"
#include "model/defaults.h"
#include "roced/v1/peer.pb.h"
#include "util/clock.h"

namespace roced::agent {

// UD ports (RoCE ports, rails) the mesh opens at most; a peer's rails
// beyond it are not probed.
inline constexpr size_t kMaxMeshPorts = 8;

// The addresses a name resolves to, as host:port gRPC addresses (IPv6 in
// brackets), sorted; at most mesh::kMaxInventoryMembers.
using ResolveFn = std::function<absl::StatusOr<std::vector<std::string>>(const std::string& name, uint16_t port)>;

// --mesh-dns NAME:PORT -> (NAME, PORT). INVALID_ARGUMENT naming the flag.
absl::StatusOr<std::pair<std::string, uint16_t>> ParseMeshDns(const std::string& text);

// A peer's Describe over gRPC (address, deadline).
using DescribeFn =
    std::function<absl::StatusOr<roced::v1::DescribeResponse>(const std::string& address, absl::Time deadline)>;

struct MeshMembershipOptions {
  // The inventory file, or (when set) the DNS name and port.
  std::string inventory_path;
  std::string dns_name;
  uint16_t dns_port = model::defaults::kGrpcPort;
  ResolveFn resolve;    // unset: util::ResolveAll (getaddrinfo)
  DescribeFn describe;  // unset: gRPC with `peer_credentials` (null: plaintext)
  std::shared_ptr<grpc::ChannelCredentials> peer_credentials;
  // The DNS listings' clock. Null: util::RealClock(). Not owned.
  util::Clock* clock = nullptr;
};

class MeshMembership {
 public:
  explicit MeshMembership(MeshMembershipOptions options);

  // The members now. On an error (the inventory unreadable or invalid, no
  // DNS address answering) the caller keeps last(). A DNS round ends early
  // once `stop` is set.
  absl::StatusOr<std::vector<mesh::Member>> Read(const std::atomic<bool>& stop);
  // The last good membership; empty before the first.
  const std::vector<mesh::Member>& last() const { return members_; }
  // The responders of the peer `name` at `address` (its rails, in
  // Describe's order, at most kMaxMeshPorts): FAILED_PRECONDITION when the
  // address answers as another node or has no mesh responder.
  absl::StatusOr<std::vector<mesh::MeshTarget>> Responders(const std::string& name, const std::string& address);
  // "the inventory file F" or "DNS N:P", for log lines.
  std::string Source() const;

 private:
  absl::StatusOr<std::vector<mesh::Member>> ReadInventory();
  absl::StatusOr<std::vector<mesh::Member>> ResolveMembers(const std::atomic<bool>& stop);

  MeshMembershipOptions options_;
  std::vector<mesh::Member> members_;
  mesh::DescribedMembers dns_members_;
  absl::Time inventory_mtime_ = absl::InfinitePast();
};

}  // namespace roced::agent

#include "agent/runtimes/mesh_membership.h"

#include <arpa/inet.h>
#include <sys/stat.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "mesh/inventory.h"
#include "roced/v1/peer.grpc.pb.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/resolve.h"

namespace roced::agent {
namespace {

// How long one Describe may take (the members thread waits on it).
constexpr absl::Duration kDescribeTimeout = absl::Seconds(2);

absl::StatusOr<roced::v1::DescribeResponse> GrpcDescribe(const std::shared_ptr<grpc::ChannelCredentials>& creds,
                                                         const std::string& address, absl::Time deadline) {
  auto channel = grpc::CreateChannel(address, creds ? creds : grpc::InsecureChannelCredentials());
  auto stub = roced::v1::ProbePeer::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(deadline));
  roced::v1::DescribeResponse response;
  grpc::Status st = stub->Describe(&ctx, roced::v1::DescribeRequest(), &response);
  if (!st.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(st.error_code()),
                        absl::StrCat("Describe ", address, ": ", st.error_message()));
  }
  return response;
}

// The peer's endpoints with a mesh responder, as targets (its rails, in
// Describe's order; at most kMaxMeshPorts).
absl::StatusOr<std::vector<mesh::MeshTarget>> TargetsOf(const roced::v1::DescribeResponse& d) {
  std::vector<mesh::MeshTarget> out;
  for (const roced::v1::MeshEndpoint& e : d.endpoints()) {
    if (e.ud_qpn() == 0 || out.size() >= kMaxMeshPorts) continue;
    mesh::MeshTarget t;
    std::array<uint8_t, 16> gid{};
    if (inet_pton(AF_INET6, e.gid().c_str(), gid.data()) != 1) {
      return absl::InvalidArgumentError(absl::StrCat("endpoint GID \"", e.gid(), "\" does not parse"));
    }
    t.gid = gid;
    t.qpn = e.ud_qpn();
    t.active_mtu = e.active_mtu();
    out.push_back(t);
  }
  if (out.empty()) return absl::FailedPreconditionError("no RoCE port with a mesh responder (is its mesh on?)");
  return out;
}

}  // namespace

absl::StatusOr<std::pair<std::string, uint16_t>> ParseMeshDns(const std::string& text) {
  return util::ParseNamePort("--mesh-dns", text);
}

MeshMembership::MeshMembership(MeshMembershipOptions options) : options_(std::move(options)) {
  if (options_.clock == nullptr) options_.clock = util::RealClock();
  if (!options_.resolve) options_.resolve = util::ResolveAll;
  if (!options_.describe) {
    options_.describe = [creds = options_.peer_credentials](const std::string& address, absl::Time deadline) {
      return GrpcDescribe(creds, address, deadline);
    };
  }
}

std::string MeshMembership::Source() const {
  return options_.dns_name.empty() ? absl::StrCat("the inventory file ", options_.inventory_path)
                                   : absl::StrCat("DNS ", options_.dns_name, ":", options_.dns_port);
}

absl::StatusOr<std::vector<mesh::Member>> MeshMembership::Read(const std::atomic<bool>& stop) {
  return options_.dns_name.empty() ? ReadInventory() : ResolveMembers(stop);
}

absl::StatusOr<std::vector<mesh::Member>> MeshMembership::ReadInventory() {
  struct stat st;
  if (::stat(options_.inventory_path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("inventory ", options_.inventory_path, ": ", std::strerror(errno)));
  }
  if (static_cast<size_t>(st.st_size) > mesh::kMaxInventoryBytes) {
    return absl::InvalidArgumentError(absl::StrCat("inventory ", options_.inventory_path, " is ", st.st_size,
                                                   " bytes, more than the ", mesh::kMaxInventoryBytes, " allowed"));
  }
  const absl::Time mtime = absl::TimeFromTimespec(st.st_mtim);
  if (mtime == inventory_mtime_) return members_;
  absl::StatusOr<std::string> text =
      util::ReadRegularFile(options_.inventory_path, mesh::kMaxInventoryBytes, "inventory");
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<mesh::Member>> members = mesh::ParseInventory(*text);
  if (!members.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(options_.inventory_path, ": ", members.status().message()));
  }
  inventory_mtime_ = mtime;
  members_ = *std::move(members);
  LOG_INFO << "mesh: " << members_.size() << " members from " << options_.inventory_path;
  return members_;
}

absl::StatusOr<std::vector<mesh::Member>> MeshMembership::ResolveMembers(const std::atomic<bool>& stop) {
  absl::StatusOr<std::vector<std::string>> addresses = options_.resolve(options_.dns_name, options_.dns_port);
  if (!addresses.ok()) return addresses.status();
  for (const std::string& address : dns_members_.Listed(*addresses, options_.clock->Now())) {
    if (stop) break;
    // A gRPC deadline: real time, whatever the clock.
    absl::StatusOr<roced::v1::DescribeResponse> d = options_.describe(address, absl::Now() + kDescribeTimeout);
    if (!d.ok()) {
      LOG_DEBUG << "mesh: " << d.status().message();
    }
    dns_members_.Described(address,
                           d.ok() ? std::optional<mesh::Member>({d->node_name(), address, d->tor(), d->pod()})
                                  : std::nullopt,
                           options_.clock->Now());
  }
  std::vector<mesh::Member> members = dns_members_.Members();
  if (members.empty()) {
    return absl::UnavailableError(absl::StrCat("DNS ", options_.dns_name, ": none of its ", addresses->size(),
                                               " addresses answered Describe"));
  }
  if (members.size() != members_.size()) {
    LOG_INFO << "mesh: " << members.size() << " members from DNS " << options_.dns_name;
  }
  members_ = members;
  return members;
}

absl::StatusOr<std::vector<mesh::MeshTarget>> MeshMembership::Responders(const std::string& name,
                                                                         const std::string& address) {
  // A gRPC deadline: real time, whatever the clock.
  absl::StatusOr<roced::v1::DescribeResponse> d = options_.describe(address, absl::Now() + kDescribeTimeout);
  if (!d.ok()) return d.status();
  absl::StatusOr<std::vector<mesh::MeshTarget>> targets = TargetsOf(*d);
  if (targets.ok() && d->node_name() != name) {
    return absl::FailedPreconditionError(
        absl::StrCat(address, " is ", d->node_name(), ", not ", name, " as the inventory says"));
  }
  return targets;
}

}  // namespace roced::agent

#include "agent/api/unix_peers.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace roced::agent {

bool UnixPeer::InGroup(gid_t group) const {
  return gid == group || std::find(groups.begin(), groups.end(), group) != groups.end();
}

std::string UnixPeer::ToString() const { return absl::StrCat("uid ", uid, " gid ", gid, " pid ", pid); }

void UnixPeers::Set(int fd, UnixPeer peer) {
  std::lock_guard<std::mutex> lock(mu_);
  peers_[fd] = std::move(peer);
}

std::optional<UnixPeer> UnixPeers::Get(int fd) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = peers_.find(fd);
  if (it == peers_.end()) return std::nullopt;
  return it->second;
}

std::optional<int> UnixPeers::FdOf(const std::string& grpc_peer) {
  if (!absl::StartsWith(grpc_peer, "fd:")) return std::nullopt;
  int fd = -1;
  if (!absl::SimpleAtoi(grpc_peer.substr(3), &fd) || fd < 0) return std::nullopt;
  return fd;
}

}  // namespace roced::agent

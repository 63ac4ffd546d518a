// Who is on the other end of a unix socket connection: the credentials the
// listener (agent/serve/unix_listener.h) reads at accept, by the fd number
// gRPC names the connection's peer with ("fd:N"). The gate reads them; the
// listener writes them.
#pragma once

#include <sys/types.h>

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"

namespace roced::agent {

struct UnixPeer {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;
  std::vector<gid_t> groups;  // supplementary groups

  bool InGroup(gid_t group) const;
  // "uid 1000 gid 1000 pid 4242"
  std::string ToString() const;
};

// Connection fd -> its caller. Thread-safe; the mutex is a leaf.
class UnixPeers {
 public:
  void Set(int fd, UnixPeer peer) ABSL_LOCKS_EXCLUDED(mu_);
  std::optional<UnixPeer> Get(int fd) const ABSL_LOCKS_EXCLUDED(mu_);
  // The fd of a gRPC peer string "fd:N"; nullopt for any other peer.
  static std::optional<int> FdOf(const std::string& grpc_peer);

 private:
  mutable std::mutex mu_;
  std::map<int, UnixPeer> peers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace roced::agent

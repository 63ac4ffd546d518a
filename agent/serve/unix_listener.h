// The local API socket, with the caller's credentials. gRPC does not say
// who is on the other end of a unix socket, so the agent accepts the
// connections itself, reads SO_PEERCRED (uid, gid, pid) and SO_PEERGROUPS
// (supplementary groups) and hands each connection to the gRPC server
// (grpc::AddInsecureChannelFromFd). gRPC names such a connection's peer
// "fd:N"; UnixPeers maps N to the credentials read at accept.
//
// Why the fd number identifies the connection for as long as a call on it
// runs: gRPC closes the descriptor only when the transport is destroyed,
// and a call in progress holds a reference to its transport, so N cannot
// be reused by a new connection while a handler of the old one is running.
// A new connection that gets N overwrites the entry before gRPC sees it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/api/unix_peers.h"

namespace grpc {
class Server;
}

namespace roced::agent {

struct UnixListenerOptions {
  std::string path;
  // Group owning the socket (root and its members connect); -1: root's.
  gid_t group = static_cast<gid_t>(-1);
  // Mode 0666 instead of 0660: callers outside the group may connect (and
  // get the access policy's socket.other_roles).
  bool others_may_connect = false;
  // Where the callers' credentials go (must outlive the listener).
  UnixPeers* peers = nullptr;
};

class UnixListener {
 public:
  explicit UnixListener(UnixListenerOptions options) : options_(std::move(options)) {}
  ~UnixListener() { Stop(); }
  UnixListener(const UnixListener&) = delete;
  UnixListener& operator=(const UnixListener&) = delete;

  // Creates the directory (0755), replaces a stale socket, binds, sets the
  // owner group and mode, listens. Errors name the path.
  absl::Status Bind();
  // Starts accepting, handing connections to `server` (which must be
  // started and outlive Stop()).
  void Serve(grpc::Server* server);
  // Stops accepting and removes the socket file. Open connections stay
  // with gRPC (its shutdown ends them).
  void Stop();

 private:
  void AcceptLoop(grpc::Server* server);

  UnixListenerOptions options_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: Stop() wakes the accept loop
  std::thread thread_;
};

// The gid of group `name` (a name or a number); errors name the group.
absl::StatusOr<gid_t> LookUpGroup(const std::string& name);

}  // namespace roced::agent

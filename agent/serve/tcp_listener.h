// The gRPC TCP listener. roced accepts TCP connections itself and hands each
// to the gRPC server through an external connection acceptor
// (grpc::ServerBuilder::experimental().AddExternalConnectionAcceptor), which
// runs the server's credentials (TLS) on it as on a port of its own.
//
// Why not gRPC's own listener: gRPC 1.51's (tcp_server_posix) stops
// accepting for good on the first accept4() error other than EAGAIN and
// ECONNABORTED: out of descriptors (EMFILE, "Failed accept4: Too many open
// files") every later TCP call timed out while the "grpc" component still
// said healthy. This listener
//   - holds at most `max_connections` connections (by default
//     DefaultTcpConnectionCap(), below the open-file limit), and at most
//     `max_per_address` from one address (by default an eighth of that:
//     one host cannot take them all); one past either is accepted and
//     closed at once, so its client fails fast (the per-address refusals
//     are logged every 10 s at most);
//   - on EMFILE, ENFILE, ENOBUFS or ENOMEM gives up a spare descriptor it
//     keeps, accepts and closes the waiting connection (the listen queue
//     does not fill with connections nobody serves), and tries again every
//     100 ms;
//   - reports both through `on_health` (false, with the reason) and reports
//     true again once a connection is handed over or, quiet, once a
//     descriptor can be had and the connections are below the cap.
//
// How it knows a connection ended: gRPC closes the descriptor without
// telling. The listener keeps each handed-over descriptor with its socket's
// inode; a descriptor that is closed, or now names another file, is gone.
// It counts only when the count reaches the cap (fstat each: ~0.3 us).
#pragma once

#include <netdb.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace grpc::experimental {
class ExternalConnectionAcceptor;
}

namespace roced::agent {

// The most TCP connections the gRPC listener holds at once.
inline constexpr int kMaxTcpConnections = 1024;
// How long gRPC waits for a new connection's TLS handshake and HTTP/2
// preface before closing it (gRPC's default: 120 s): a connection that
// sends nothing frees its place under the caps after this.
inline constexpr absl::Duration kTcpHandshakeTimeout = absl::Seconds(10);

// min(kMaxTcpConnections, a quarter of the open-file soft limit), at least
// 16: half the limit is the counter files' cache (hal::CounterFiles), the
// rest is left to everything else (unix socket connections, files read).
int DefaultTcpConnectionCap();

struct TcpListenerOptions {
  // host:port as --grpc-listen takes it: "127.0.0.1:7471", "[::1]:7471",
  // "localhost:7471" (every address it resolves to), and the wildcards
  // "[::]:7471" and "0.0.0.0:7471" (both IPv6 and IPv4 where the host has
  // IPv6, as gRPC listens). Port 0 picks a free port.
  std::string listen;
  // 0: DefaultTcpConnectionCap().
  int max_connections = 0;
  // 0: max(4, max_connections / 8).
  int max_per_address = 0;
  // Called from the accept thread when accepting stops or starts working
  // again (false: the reason).
  std::function<void(bool ok, const std::string& why)> on_health;
};

class TcpListener {
 public:
  explicit TcpListener(TcpListenerOptions options);
  ~TcpListener() { Stop(); }
  TcpListener(const TcpListener&) = delete;
  TcpListener& operator=(const TcpListener&) = delete;

  // Binds and listens on every address of `listen` (no SO_REUSEPORT: a
  // port another process holds is an error). Errors name the address.
  absl::Status Bind();
  // The port bound (after Bind; the one picked for port 0).
  int port() const { return port_; }
  int max_connections() const { return cap_; }
  int max_per_address() const { return per_peer_cap_; }
  // Starts accepting, handing connections to `acceptor` (whose server must
  // be started; it must outlive Stop()).
  void Serve(grpc::experimental::ExternalConnectionAcceptor* acceptor);
  // Stops accepting and closes the listening sockets. Connections handed
  // over stay with gRPC.
  void Stop();

 private:
  struct Held {
    int fd;
    ino_t inode;
    std::string host;  // the caller's address
  };
  // 0, or the errno of the socket, bind or listen that failed.
  int BindOne(const addrinfo& ai, bool dual_stack);
  // Every address `host` resolves to; `busy`: one was in use.
  absl::Status BindHost(const std::string& host, const std::string& port, bool dual_stack, bool* busy);
  void AcceptLoop(grpc::experimental::ExternalConnectionAcceptor* acceptor);
  void AcceptOne(int listen_fd, grpc::experimental::ExternalConnectionAcceptor* acceptor);
  void ShedOne(int listen_fd);
  // Drops the connections gRPC has closed; returns how many are left.
  size_t Live();
  // Connections held from `host` (dropping closed ones first when that
  // reaches the per-address cap).
  size_t FromHost(const std::string& host);
  void Report(bool ok, const std::string& why);
  // Whether a descriptor can be had and the connections are below the cap.
  bool CanAcceptAgain();

  TcpListenerOptions options_;
  int cap_;
  int per_peer_cap_;
  std::vector<int> listen_fds_;
  int port_ = 0;
  int wake_fd_ = -1;   // eventfd: Stop() wakes the accept loop
  int spare_fd_ = -1;  // given up to shed a connection when out of descriptors
  std::thread thread_;
  // Accept thread only:
  std::vector<Held> held_;
  bool healthy_ = true;
  uint64_t refused_per_peer_ = 0;  // since the last log line
  absl::Time last_per_peer_log_ = absl::InfinitePast();
};

}  // namespace roced::agent

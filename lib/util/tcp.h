// TCP client plumbing shared by rocectl's HTTP GET (util/http_get.h) and
// roced's metrics endpoint, which connects to its own listener to stop it
// quickly: a descriptor that closes itself, a bounded wait on one, and a
// connect to a host given by name or address.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace roced::util {

// Owns a file descriptor and closes it when it goes out of scope. -1 when
// empty. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept;
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();

  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

// Waits until poll(2) reports one of `events` on `fd`. DEADLINE_EXCEEDED
// past `deadline`, UNAVAILABLE when poll fails; both name `what`.
absl::Status AwaitFd(int fd, short events, absl::Time deadline, const std::string& what);

// A TCP connection to host:port. `host` is a name, an IPv4 address or an
// IPv6 one without brackets; each address it resolves to is tried in turn.
// The socket is non-blocking and close-on-exec. UNAVAILABLE when the name
// does not resolve or no address accepts the connection,
// DEADLINE_EXCEEDED when one is still connecting at `deadline`; both name
// host:port.
absl::StatusOr<UniqueFd> ConnectTcp(const std::string& host, uint16_t port, absl::Time deadline);

}  // namespace roced::util

// The rtnetlink socket the libnl-route readers share: one connected
// NETLINK_ROUTE socket per call (in the calling thread's network
// namespace), and libnl's error codes as absl statuses.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

struct nl_sock;
struct nl_cache;
struct nl_msg;

namespace roced::hal {

struct NlSockDeleter {
  void operator()(nl_sock* s) const;
};
struct NlCacheDeleter {
  void operator()(nl_cache* c) const;
};
struct NlMsgDeleter {
  void operator()(nl_msg* m) const;
};
using NlSockPtr = std::unique_ptr<nl_sock, NlSockDeleter>;
using NlCachePtr = std::unique_ptr<nl_cache, NlCacheDeleter>;
using NlMsgPtr = std::unique_ptr<nl_msg, NlMsgDeleter>;

// A socket connected to NETLINK_ROUTE.
absl::StatusOr<NlSockPtr> ConnectRtnl();

// A negative libnl return code as a status: NOT_FOUND for a missing object
// or device, PERMISSION_DENIED, INVALID_ARGUMENT, UNAVAILABLE (busy, try
// again), UNIMPLEMENTED, else INTERNAL; `what` leads the message.
absl::Status NlError(int rc, const std::string& what);

}  // namespace roced::hal

#include "hal/rtnl.h"

#include <netlink/cache.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "absl/strings/str_cat.h"

namespace roced::hal {

void NlSockDeleter::operator()(nl_sock* s) const { nl_socket_free(s); }
void NlCacheDeleter::operator()(nl_cache* c) const { nl_cache_free(c); }
void NlMsgDeleter::operator()(nl_msg* m) const { nlmsg_free(m); }

absl::Status NlError(int rc, const std::string& what) {
  std::string msg = absl::StrCat(what, ": ", nl_geterror(rc));
  switch (-rc) {
    case NLE_OBJ_NOTFOUND:
    case NLE_NODEV:
      return absl::NotFoundError(msg);
    case NLE_PERM:
      return absl::PermissionDeniedError(msg);
    case NLE_INVAL:
    case NLE_RANGE:
      return absl::InvalidArgumentError(msg);
    case NLE_BUSY:
    case NLE_AGAIN:
      return absl::UnavailableError(msg);
    case NLE_OPNOTSUPP:
      return absl::UnimplementedError(msg);
    default:
      return absl::InternalError(msg);
  }
}

absl::StatusOr<NlSockPtr> ConnectRtnl() {
  NlSockPtr sock(nl_socket_alloc());
  if (!sock) return absl::ResourceExhaustedError("nl_socket_alloc failed");
  int rc = nl_connect(sock.get(), NETLINK_ROUTE);
  if (rc < 0) return NlError(rc, "netlink connect");
  return sock;
}

}  // namespace roced::hal

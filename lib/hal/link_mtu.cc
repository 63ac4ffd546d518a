#include "hal/link_mtu.h"

#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/socket.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "hal/rtnl.h"

namespace roced::hal {
namespace {

struct LinkDeleter {
  void operator()(rtnl_link* l) const { rtnl_link_put(l); }
};

using LinkPtr = std::unique_ptr<rtnl_link, LinkDeleter>;

// The link as the kernel has it now, on a fresh socket.
absl::Status GetLink(const std::string& ifname, NlSockPtr* sock, LinkPtr* link) {
  auto s = ConnectRtnl();
  if (!s.ok()) return s.status();
  rtnl_link* raw = nullptr;
  int rc = rtnl_link_get_kernel(s->get(), 0, ifname.c_str(), &raw);
  if (rc < 0) return NlError(rc, absl::StrCat(ifname, ": get link"));
  *sock = std::move(*s);
  link->reset(raw);
  return absl::OkStatus();
}

}  // namespace

bool LinkMtu::Exists(const std::string& ifname) const { return if_nametoindex(ifname.c_str()) != 0; }

absl::StatusOr<uint32_t> LinkMtu::Get(const std::string& ifname) const {
  NlSockPtr sock;
  LinkPtr link;
  if (absl::Status s = GetLink(ifname, &sock, &link); !s.ok()) return s;
  return rtnl_link_get_mtu(link.get());
}

absl::Status LinkMtu::Set(const std::string& ifname, uint32_t mtu) const {
  NlSockPtr sock;
  LinkPtr link;
  if (absl::Status s = GetLink(ifname, &sock, &link); !s.ok()) return s;
  LinkPtr change(rtnl_link_alloc());
  rtnl_link_set_mtu(change.get(), mtu);
  int rc = rtnl_link_change(sock.get(), link.get(), change.get(), 0);
  if (rc < 0) return NlError(rc, absl::StrCat(ifname, ": set MTU ", mtu));
  return absl::OkStatus();
}

}  // namespace roced::hal

#include "hal/neighbours.h"

#include <arpa/inet.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netlink/addr.h>
#include <netlink/attr.h>
#include <netlink/cache.h>
#include <netlink/msg.h>
#include <netlink/route/addr.h>
#include <netlink/route/neighbour.h>
#include <netlink/socket.h>
#include <sys/socket.h>

#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hal/rtnl.h"

namespace roced::hal {

namespace {

// The address as text ("" for anything but IPv4/IPv6).
std::string IpText(nl_addr* addr) {
  if (addr == nullptr) return "";
  const int family = nl_addr_get_family(addr);
  if ((family != AF_INET && family != AF_INET6) ||
      nl_addr_get_len(addr) != (family == AF_INET ? 4u : 16u)) {
    return "";
  }
  char buf[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(family, nl_addr_get_binary_addr(addr), buf, sizeof(buf)) == nullptr) return "";
  return buf;
}

absl::StatusOr<int> IfIndex(const std::string& ifname) {
  const unsigned index = if_nametoindex(ifname.c_str());
  if (index == 0) return absl::NotFoundError(absl::StrCat(ifname, ": no such netdev"));
  return static_cast<int>(index);
}

// The objects of one rtnetlink dump (`alloc`: rtnl_neigh_alloc_cache,
// rtnl_addr_alloc_cache) that belong to `ifname`, each converted by
// `convert` (nullopt: left out).
template <typename Obj, typename Out>
absl::StatusOr<std::vector<Out>> DumpOf(const std::string& ifname, int (*alloc)(nl_sock*, nl_cache**),
                                        int (*ifindex_of)(Obj*), std::optional<Out> (*convert)(Obj*),
                                        const char* what) {
  absl::StatusOr<int> index = IfIndex(ifname);
  if (!index.ok()) return index.status();
  absl::StatusOr<NlSockPtr> sock = ConnectRtnl();
  if (!sock.ok()) return sock.status();
  nl_cache* raw = nullptr;
  if (int rc = alloc(sock->get(), &raw); rc < 0) return NlError(rc, absl::StrCat(ifname, ": ", what));
  NlCachePtr cache(raw);
  std::vector<Out> out;
  for (nl_object* o = nl_cache_get_first(cache.get()); o != nullptr; o = nl_cache_get_next(o)) {
    Obj* obj = reinterpret_cast<Obj*>(o);
    if (ifindex_of(obj) != *index) continue;
    if (std::optional<Out> v = convert(obj)) out.push_back(*std::move(v));
  }
  return out;
}

std::optional<Neighbour> NeighbourOf(rtnl_neigh* n) {
  Neighbour e;
  e.ip = IpText(rtnl_neigh_get_dst(n));
  if (e.ip.empty()) return std::nullopt;
  e.state = static_cast<uint16_t>(rtnl_neigh_get_state(n));
  if (nl_addr* ll = rtnl_neigh_get_lladdr(n); ll != nullptr && nl_addr_get_len(ll) > 0) {
    char buf[64] = {};
    e.lladdr = nl_addr2str(ll, buf, sizeof(buf));
  }
  return e;
}

std::optional<IpAddress> AddressOf(rtnl_addr* addr) {
  IpAddress e;
  e.ip = IpText(rtnl_addr_get_local(addr));
  if (e.ip.empty()) return std::nullopt;
  e.prefix_len = static_cast<uint32_t>(rtnl_addr_get_prefixlen(addr));
  e.ipv6 = rtnl_addr_get_family(addr) == AF_INET6;
  return e;
}

// RTM_NEWROUTE's answer to a route lookup: RTA_OIF and RTA_GATEWAY.
int ParseRouteReply(nl_msg* msg, void* arg) {
  auto* hop = static_cast<RouteHop*>(arg);
  nlmsghdr* hdr = nlmsg_hdr(msg);
  if (hdr->nlmsg_type != RTM_NEWROUTE) return NL_SKIP;
  const auto* rtm = static_cast<const rtmsg*>(nlmsg_data(hdr));
  nlattr* tb[RTA_MAX + 1] = {};
  if (nlmsg_parse(hdr, sizeof(rtmsg), tb, RTA_MAX, nullptr) < 0) return NL_SKIP;
  if (tb[RTA_OIF] != nullptr) {
    char name[IF_NAMESIZE] = {};
    if (if_indextoname(nla_get_u32(tb[RTA_OIF]), name) != nullptr) hop->netdev = name;
  }
  const int len = tb[RTA_GATEWAY] != nullptr ? nla_len(tb[RTA_GATEWAY]) : 0;
  if (len == 4 || len == 16) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (inet_ntop(rtm->rtm_family, nla_data(tb[RTA_GATEWAY]), buf, sizeof(buf)) != nullptr) hop->gateway = buf;
  }
  return NL_OK;
}

}  // namespace

bool NeighbourResolved(uint16_t state) {
  return (state & (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT | NUD_NOARP)) != 0;
}

std::string NeighbourStateName(uint16_t state) {
  static constexpr std::pair<uint16_t, const char*> kNames[] = {
      {NUD_INCOMPLETE, "INCOMPLETE"}, {NUD_REACHABLE, "REACHABLE"}, {NUD_STALE, "STALE"},
      {NUD_DELAY, "DELAY"},           {NUD_PROBE, "PROBE"},         {NUD_FAILED, "FAILED"},
      {NUD_NOARP, "NOARP"},           {NUD_PERMANENT, "PERMANENT"},
  };
  std::vector<std::string> names;
  for (const auto& [bit, name] : kNames) {
    if (state & bit) names.push_back(name);
  }
  return names.empty() ? "NONE" : absl::StrJoin(names, "|");
}

absl::StatusOr<std::vector<Neighbour>> ListNeighbours(const std::string& ifname) {
  return DumpOf<rtnl_neigh, Neighbour>(ifname, rtnl_neigh_alloc_cache, rtnl_neigh_get_ifindex, NeighbourOf,
                                       "dump neighbours");
}

absl::StatusOr<std::vector<IpAddress>> ListAddresses(const std::string& ifname) {
  return DumpOf<rtnl_addr, IpAddress>(ifname, rtnl_addr_alloc_cache, rtnl_addr_get_ifindex, AddressOf,
                                      "dump addresses");
}

absl::StatusOr<RouteHop> RouteTo(const std::string& ip) {
  unsigned char dst[16] = {};
  const int family = inet_pton(AF_INET, ip.c_str(), dst) == 1 ? AF_INET
                     : inet_pton(AF_INET6, ip.c_str(), dst) == 1 ? AF_INET6 : AF_UNSPEC;
  if (family == AF_UNSPEC) return absl::InvalidArgumentError(absl::StrCat("route to '", ip, "': not an IP address"));
  absl::StatusOr<NlSockPtr> sock = ConnectRtnl();
  if (!sock.ok()) return sock.status();
  nl_socket_disable_auto_ack(sock->get());  // the reply (or an error) is the answer
  NlMsgPtr msg(nlmsg_alloc_simple(RTM_GETROUTE, NLM_F_REQUEST));
  rtmsg rtm{};
  rtm.rtm_family = static_cast<unsigned char>(family);
  rtm.rtm_dst_len = family == AF_INET ? 32 : 128;
  if (!msg || nlmsg_append(msg.get(), &rtm, sizeof(rtm), NLMSG_ALIGNTO) < 0 ||
      nla_put(msg.get(), RTA_DST, family == AF_INET ? 4 : 16, dst) < 0) {
    return absl::ResourceExhaustedError("route lookup: cannot build the request");
  }
  RouteHop hop;
  nl_socket_modify_cb(sock->get(), NL_CB_VALID, NL_CB_CUSTOM, ParseRouteReply, &hop);
  const std::string what = absl::StrCat("route to ", ip);
  if (int rc = nl_send_auto(sock->get(), msg.get()); rc < 0) return NlError(rc, what);
  if (int rc = nl_recvmsgs_default(sock->get()); rc < 0) return NlError(rc, what);
  if (hop.netdev.empty()) return absl::NotFoundError(absl::StrCat(what, ": no output netdev in the answer"));
  return hop;
}

}  // namespace roced::hal

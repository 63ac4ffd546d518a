#include "probe/gid.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "probe/reason.h"

namespace roced::probe {

bool IsIpv4MappedGid(const std::array<uint8_t, 16>& gid) {
  for (int i = 0; i < 10; ++i) {
    if (gid[i] != 0) return false;
  }
  return gid[10] == 0xff && gid[11] == 0xff;
}

std::string Ipv4OfGid(const std::array<uint8_t, 16>& gid) {
  if (!IsIpv4MappedGid(gid)) return "";
  return absl::StrCat(gid[12], ".", gid[13], ".", gid[14], ".", gid[15]);
}

absl::StatusOr<GidEntry> SelectRoceV2Ipv4Gid(const std::vector<GidEntry>& table, uint32_t port,
                                             uint32_t netdev_ifindex, const std::string& ipv4) {
  const GidEntry* best = nullptr;
  for (const GidEntry& e : table) {
    if (e.port != port || e.type != IBV_GID_TYPE_ROCE_V2 || !IsIpv4MappedGid(e.gid)) continue;
    if (netdev_ifindex != 0 && e.netdev_ifindex != netdev_ifindex) continue;
    if (!ipv4.empty() && Ipv4OfGid(e.gid) != ipv4) continue;
    if (best == nullptr || e.index < best->index) best = &e;
  }
  if (best == nullptr) {
    return ProbeError(absl::StatusCode::kNotFound, kReasonNoGid,
                      absl::StrCat("no RoCE v2 GID for IPv4 ", ipv4.empty() ? "(any)" : ipv4,
                                   " on port ", port,
                                   netdev_ifindex == 0 ? std::string()
                                                       : absl::StrCat(" netdev #", netdev_ifindex),
                                   " (", table.size(), " GID entries)"));
  }
  return *best;
}

namespace {
GidEntry FromIbv(const ibv_gid_entry& e) {
  GidEntry out;
  std::memcpy(out.gid.data(), e.gid.raw, 16);
  out.index = e.gid_index;
  out.port = e.port_num;
  out.type = e.gid_type;
  out.netdev_ifindex = e.ndev_ifindex;
  return out;
}
}  // namespace

absl::StatusOr<std::vector<GidEntry>> QueryGidTable(ibv_context* context, uint32_t port,
                                                    int gid_table_len) {
  std::vector<GidEntry> out;
  if (gid_table_len <= 0) return out;
  ibv_device_attr attr;
  int ports = 1;
  if (ibv_query_device(context, &attr) == 0) ports = attr.phys_port_cnt;
  // The table call wants room for every port's entries.
  std::vector<ibv_gid_entry> entries(static_cast<size_t>(gid_table_len) * static_cast<size_t>(ports));
  ssize_t n = ibv_query_gid_table(context, entries.data(), entries.size(), 0);
  if (n >= 0) {
    for (ssize_t i = 0; i < n; ++i) {
      if (entries[i].port_num == port) out.push_back(FromIbv(entries[i]));
    }
    return out;
  }
  const int table_errno = static_cast<int>(-n);
  for (int i = 0; i < gid_table_len; ++i) {
    ibv_gid_entry e;
    int rc = ibv_query_gid_ex(context, port, static_cast<uint32_t>(i), &e, 0);
    if (rc == 0) {
      out.push_back(FromIbv(e));
    } else if (rc != ENODATA && rc != EINVAL) {
      return ProbeError(absl::StatusCode::kUnavailable, kReasonDeviceUnavailable,
                        absl::StrCat("ibv_query_gid_table: ", std::strerror(table_errno),
                                     "; ibv_query_gid_ex(", i, "): ", std::strerror(rc)));
    }
  }
  return out;
}

}  // namespace roced::probe

// GID selection for RoCE v2 probes. A port's GID table holds several
// entries per netdev (link-local IPv6, each IPv4/IPv6 address, RoCE v1 and
// v2 flavours) and their indexes move when addresses or VLANs change, so the
// probe engine picks its GID by (netdev, IPv4 address, RoCE v2) from the
// table as it is when the endpoint is created, never by a fixed index.
//
// SelectRoceV2Ipv4Gid is pure (unit-tested on hand-made tables);
// QueryGidTable reads a live table through libibverbs. Both are
// thread-safe (the context is the caller's, borrowed for the call).
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace roced::probe {

// One GID table entry, as ibv_query_gid_table reports it.
struct GidEntry {
  std::array<uint8_t, 16> gid{};
  uint32_t index = 0;
  uint32_t port = 0;
  // IBV_GID_TYPE_IB, IBV_GID_TYPE_ROCE_V1 or IBV_GID_TYPE_ROCE_V2.
  uint32_t type = 0;
  // The netdev the entry belongs to (0: none).
  uint32_t netdev_ifindex = 0;
};

// True for an IPv4-mapped GID (::ffff:a.b.c.d), the form RoCE v2 uses for
// an IPv4 address.
bool IsIpv4MappedGid(const std::array<uint8_t, 16>& gid);

// The dotted IPv4 address inside an IPv4-mapped GID ("" otherwise).
std::string Ipv4OfGid(const std::array<uint8_t, 16>& gid);

// Picks the RoCE v2 entry of `port` for an IPv4 address on the netdev with
// index `netdev_ifindex` (0: any netdev). With `ipv4` set, only the entry
// for that address qualifies; without it, the lowest index wins (stable
// while the table does not change). NOT_FOUND naming what was looked for
// when nothing qualifies.
absl::StatusOr<GidEntry> SelectRoceV2Ipv4Gid(const std::vector<GidEntry>& table, uint32_t port,
                                             uint32_t netdev_ifindex, const std::string& ipv4);

// The populated GID entries of every port of `context`, read with
// ibv_query_gid_table, falling back to ibv_query_gid_ex per index for
// providers without the table call. `gid_table_len` bounds the per-index
// walk (from ibv_port_attr).
absl::StatusOr<std::vector<GidEntry>> QueryGidTable(ibv_context* context, uint32_t port,
                                                    int gid_table_len);

}  // namespace roced::probe

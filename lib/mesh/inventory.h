// The fleet's membership from a static inventory file, the
// source for fleets without a DNS name that resolves to every agent. One
// member a line, columns separated by spaces or tabs:
//
//     # NAME     ADDRESS             TOR        POD
//     node-0001  10.0.0.1:7471       tor-a01    pod-a
//     node-0002  [fd00::2]:7471      tor-a01    pod-a
//     node-0003  node-0003.dc:7471   -          pod-b
//
// NAME is the node's name (unique), ADDRESS its gRPC address host:port
// (an IPv6 host in brackets), TOR and POD as in Member; both may be left
// out, and "-" leaves one empty (the agent then takes its ToR from LLDP,
// and a member without a ToR stands under a ToR of its own). "#" starts a
// comment; blank lines are skipped.
//
// Pure: the text is already in memory. Bounded: at most
// kMaxInventoryBytes of text, kMaxInventoryMembers members, fields of at
// most kMaxInventoryField bytes of printable ASCII. Anything else is
// refused, naming the line, the column and what is allowed, and nothing
// of a refused inventory is used.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "mesh/pinglist.h"

namespace roced::mesh {

inline constexpr size_t kMaxInventoryBytes = 32u << 20;
inline constexpr size_t kMaxInventoryMembers = 100000;
inline constexpr size_t kMaxInventoryField = 253;  // a DNS name's length

// The members in the file's order. INVALID_ARGUMENT as above.
absl::StatusOr<std::vector<Member>> ParseInventory(std::string_view text);

}  // namespace roced::mesh

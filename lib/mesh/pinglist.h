// The fleet mesh's pinglist: which peers one agent probes,
// computed by every agent on its own from the same membership, with no
// controller. The choices of all agents together cover every ToR pair.
//
// What an agent probes:
//  - every other member under its own ToR (the RNIC and the ToR's ports);
//  - for every other ToR B of the fleet, in its pod or not: if it is one
//    of the `probers_per_tor_pair` members of its own ToR A that rank
//    highest for the pair (A, B), the member of B at the same rank.
//
// Ranks are rendezvous (highest random weight) hashes of the member's
// name keyed by the ordered ToR pair, so:
//  - every agent that holds the same membership makes the same choice,
//    and the fleet-wide union covers each ordered ToR pair (A, B) with
//    min(k, |A|, |B|) host pairs of distinct probers and distinct targets
//    (k = probers_per_tor_pair): one dead host does not blind a pair while
//    k >= 2 and both ToRs have two members;
//  - a member joining or leaving changes only the pairs it ranks in (about
//    k/|ToR| of them), not the rest of the fleet's pinglists;
//  - the cross-ToR load spreads evenly: a member of a ToR of n members in
//    a fleet of T ToRs probes about k(T-1)/n peers across ToRs.
// With 10,000 hosts, 32 per ToR (313 ToRs) and k = 5 (the default): 31 peers
// under the ToR and about 49 across (bench/mesh_sim).
//
// Pure functions over the membership: no I/O, deterministic, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace roced::mesh {

struct Member {
  std::string name;     // unique in the fleet (the node name)
  std::string address;  // its gRPC address, host:port
  std::string tor;      // its ToR switch (config, else LLDP's system name)
  std::string pod;      // its pod (may be empty: one pod)
  // Not a host: every host under `tor` as seen from other ToRs, for views
  // that keep only the far end's ToR (Prometheus's series across ToRs;
  // see mesh/localize.h). Never on a pinglist; only a target.
  bool stands_for_tor = false;
};

enum class PeerScope {
  kSameTor,   // under the agent's own ToR
  kSamePod,   // under another ToR of its pod
  kOtherPod,  // under a ToR of another pod
};

const char* PeerScopeName(PeerScope scope);

struct PinglistEntry {
  std::string peer;  // Member::name
  std::string tor;   // the peer's ToR
  PeerScope scope = PeerScope::kSameTor;
};

struct PinglistOptions {
  // Probers of each ordered ToR pair (and targets in the far ToR). 2 would
  // already leave every pair a dead host was in still probed; 5 is what it
  // takes to see 0.1% loss on one of a ToR's four uplinks within 10 s at
  // 1 probe/s across ToRs (bench/mesh_sim compares k), for about 9% more
  // probes than k = 2.
  uint32_t probers_per_tor_pair = 5;
  // An agent probes at most this many peers; beyond it the cross-ToR
  // entries of lowest weight go first (a fleet too large for the bound
  // loses coverage visibly, in the returned `dropped`, not silently).
  size_t max_peers = 1000;
};

// Allowed ranges, checked by Validate (errors name the field).
inline constexpr uint32_t kMaxProbersPerTorPair = 16;
inline constexpr size_t kMaxPeersLimit = 10000;

struct Pinglist {
  std::vector<PinglistEntry> entries;  // same ToR first, then by peer name
  size_t dropped = 0;                  // cut by max_peers
};

// INVALID_ARGUMENT naming the field and its range.
absl::Status Validate(const PinglistOptions& options);

// The pinglist of `self` (a Member::name). Members with an empty ToR are
// treated as each under a ToR of its own. Duplicate names: the first one
// counts. NOT_FOUND when `self` is not a member; INVALID_ARGUMENT for bad
// options.
absl::StatusOr<Pinglist> ComputePinglist(std::string_view self, const std::vector<Member>& members,
                                         const PinglistOptions& options);

// The key of the ToR `m` stands under: its `tor`, or for a member without
// one a ToR of its own, a key no ToR name can equal (names cannot start
// with a NUL). The pinglist and the localizer group members by it.
std::string TorKey(const Member& m);

// The rendezvous weight of `member` for `key`: a 64-bit hash that is the
// same on every agent, every build and every run (FNV-1a with a final
// mix; not absl::Hash, which is seeded per process).
uint64_t RendezvousWeight(std::string_view key, std::string_view member);

// splitmix64's finaliser, a bijective 64-bit mix: RendezvousWeight's last
// step, and the fixed-seed choices of lib/mesh/results' reservoir.
uint64_t SplitMix64Finalize(uint64_t x);

}  // namespace roced::mesh

// The mesh's membership from a DNS name (--mesh-dns): each address
// the name resolves to says who it is through its ProbePeer.Describe; what
// it said is kept for kDescribeTtl, a failure asked again after
// kDescribeRetry, so a refresh every few seconds costs a Describe only for
// what is new or due. The same two durations pace the peers' Describe for
// their mesh endpoints. Pure: the caller makes the calls and passes the
// time. Not thread-safe (the agent's members thread owns one).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "mesh/pinglist.h"

namespace roced::mesh {

inline constexpr absl::Duration kDescribeTtl = absl::Minutes(5);
inline constexpr absl::Duration kDescribeRetry = absl::Seconds(10);

class DescribedMembers {
 public:
  // The addresses the name resolves to now: what was kept of any other is
  // dropped. Returns those due a Describe at `now`, in `addresses`' order.
  std::vector<std::string> Listed(const std::vector<std::string>& addresses, absl::Time now);
  // What `address`'s Describe said (nullopt: it failed), at `now`.
  void Described(const std::string& address, std::optional<Member> member, absl::Time now);
  // The members known, by address, one per node name (the first address
  // naming it); nodes with no name are left out.
  std::vector<Member> Members() const;

 private:
  struct Entry {
    std::optional<Member> member;
    absl::Time next = absl::InfinitePast();
  };
  std::map<std::string, Entry> entries_;  // by address
};

// This node among `members`, by its node name, with the ToR and pod the
// membership leaves empty taken from what the agent knows (config mesh.tor,
// else LLDP), in `members` too (the pinglist is computed over them). NOT_FOUND
// naming the node when it is not a member.
absl::StatusOr<Member> PlaceSelf(std::vector<Member>* members, const std::string& name, const std::string& tor,
                                 const std::string& pod);

}  // namespace roced::mesh

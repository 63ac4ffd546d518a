#include "mesh/membership.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"

namespace roced::mesh {

std::vector<std::string> DescribedMembers::Listed(const std::vector<std::string>& addresses, absl::Time now) {
  const std::set<std::string> listed(addresses.begin(), addresses.end());
  std::erase_if(entries_, [&](const auto& e) { return !listed.contains(e.first); });
  std::vector<std::string> due;
  for (const std::string& address : addresses) {
    if (entries_[address].next <= now) due.push_back(address);
  }
  return due;
}

void DescribedMembers::Described(const std::string& address, std::optional<Member> member, absl::Time now) {
  Entry& e = entries_[address];
  e.next = now + (member.has_value() ? kDescribeTtl : kDescribeRetry);
  e.member = std::move(member);
}

std::vector<Member> DescribedMembers::Members() const {
  std::vector<Member> members;
  std::set<std::string> names;
  for (const auto& [address, e] : entries_) {
    if (e.member.has_value() && !e.member->name.empty() && names.insert(e.member->name).second) {
      members.push_back(*e.member);
    }
  }
  return members;
}

absl::StatusOr<Member> PlaceSelf(std::vector<Member>* members, const std::string& name, const std::string& tor,
                                 const std::string& pod) {
  auto self = std::find_if(members->begin(), members->end(), [&](const Member& m) { return m.name == name; });
  if (self == members->end()) {
    return absl::NotFoundError(absl::StrCat("this node (", name, ") is not in the inventory"));
  }
  if (self->tor.empty()) self->tor = tor;
  if (self->pod.empty()) self->pod = pod;
  return *self;
}

}  // namespace roced::mesh

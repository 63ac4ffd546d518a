#include "access/roles.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace roced::access {

namespace {
constexpr Role kRoles[] = {Role::kViewer, Role::kOperator, Role::kAdmin, Role::kPeer};
}  // namespace

RoleSet RoleSet::Of(std::initializer_list<Role> roles) {
  RoleSet set;
  for (Role r : roles) set.Grant(r);
  return set;
}

RoleSet RoleSet::All() { return Of({Role::kAdmin, Role::kPeer}); }

RoleSet& RoleSet::Grant(Role role) {
  auto bit = [](Role r) { return static_cast<uint8_t>(1u << static_cast<int>(r)); };
  bits_ |= bit(role);
  if (role == Role::kAdmin) bits_ |= bit(Role::kOperator);
  if (role == Role::kAdmin || role == Role::kOperator) bits_ |= bit(Role::kViewer);
  return *this;
}

std::string RoleSet::ToString() const {
  std::vector<absl::string_view> names;
  if (Has(Role::kAdmin)) {
    names.push_back("admin");
  } else if (Has(Role::kOperator)) {
    names.push_back("operator");
  } else if (Has(Role::kViewer)) {
    names.push_back("viewer");
  }
  if (Has(Role::kPeer)) names.push_back("peer");
  return names.empty() ? "none" : absl::StrJoin(names, ",");
}

absl::string_view RoleName(Role role) {
  switch (role) {
    case Role::kViewer: return "viewer";
    case Role::kOperator: return "operator";
    case Role::kAdmin: return "admin";
    case Role::kPeer: return "peer";
  }
  return "?";
}

std::optional<Role> ParseRole(absl::string_view name) {
  for (Role r : kRoles) {
    if (RoleName(r) == name) return r;
  }
  return std::nullopt;
}

std::string AllowedRoleNames() {
  std::vector<absl::string_view> names;
  for (Role r : kRoles) names.push_back(RoleName(r));
  return absl::StrJoin(names, ", ");
}

const std::vector<MethodRule>& MethodRules() {
  static const std::vector<MethodRule> kRules = {
      {"/roced.v1.Agent/GetState", Role::kViewer, false},
      {"/roced.v1.Agent/WatchState", Role::kViewer, false},
      {"/roced.v1.Agent/GetCounters", Role::kViewer, false},
      {"/roced.v1.Agent/ListProbeResults", Role::kViewer, false},
      {"/roced.v1.Agent/Diagnose", Role::kViewer, false},
      {"/roced.v1.Agent/ListMeshResults", Role::kViewer, false},
      // To a peer the config names; to any other address also needs admin
      // (checked by the handler, which knows the config).
      {"/roced.v1.Agent/RunProbe", Role::kOperator, true},
      {"/roced.v1.Agent/ApplyConfig", Role::kAdmin, true},
      {"/roced.v1.Agent/ConfirmConfig", Role::kAdmin, true},
      {"/roced.v1.Agent/RollbackConfig", Role::kAdmin, true},
      {"/roced.v1.ProbePeer/OpenEndpoint", Role::kPeer, true},
      {"/roced.v1.ProbePeer/CloseEndpoint", Role::kPeer, false},
      {"/roced.v1.ProbePeer/GetCounters", Role::kPeer, false},
      {"/roced.v1.ProbePeer/Describe", Role::kPeer, false},
  };
  return kRules;
}

const MethodRule* FindMethod(absl::string_view full_name) {
  for (const MethodRule& rule : MethodRules()) {
    if (rule.full_name == full_name) return &rule;
  }
  return nullptr;
}

absl::Status Authorize(absl::string_view method, RoleSet roles, absl::string_view identity) {
  const MethodRule* rule = FindMethod(method);
  if (rule == nullptr) {
    return absl::PermissionDeniedError(absl::StrCat(method, " is not served to callers"));
  }
  if (roles.Has(rule->needs)) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(method, " needs the ", RoleName(rule->needs), " role; ",
                                                  identity, " has ", roles.ToString()));
}

}  // namespace roced::access

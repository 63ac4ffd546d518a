// Who may call what: the agent's roles and the gRPC methods each may call.
//
//   viewer    reads: GetState, WatchState, GetCounters, ListProbeResults,
//             Diagnose
//   operator  viewer + RunProbe to the peers the config names
//   admin     every roced.v1.Agent method: ApplyConfig, ConfirmConfig,
//             RollbackConfig, RunProbe to any address
//   peer      the roced.v1.ProbePeer service only (other agents setting up
//             probes); nothing of roced.v1.Agent
//
// Roles are granted, never implied by the transport: a caller's roles come
// from the access policy (policy.h) for its certificate identity or its unix
// socket credentials. The table of methods (MethodRules) is the one place
// that says which roles a method needs; every handler runs behind it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <vector>

#include "absl/strings/string_view.h"
#include "absl/status/status.h"

namespace roced::access {

enum class Role : uint8_t { kViewer = 0, kOperator = 1, kAdmin = 2, kPeer = 3 };

// A set of roles. Operator includes viewer and admin includes operator:
// Grant(kAdmin) holds all three, so a check asks for the one role it needs.
class RoleSet {
 public:
  RoleSet() = default;
  static RoleSet Of(std::initializer_list<Role> roles);
  static RoleSet All();

  RoleSet& Grant(Role role);
  bool Has(Role role) const { return (bits_ >> static_cast<int>(role)) & 1u; }
  bool empty() const { return bits_ == 0; }
  RoleSet& operator|=(RoleSet other) {
    bits_ |= other.bits_;
    return *this;
  }
  bool operator==(const RoleSet& other) const { return bits_ == other.bits_; }
  // The roles granted, as the policy spells them: "admin", "operator,peer";
  // "none" when empty. The highest of viewer/operator/admin only.
  std::string ToString() const;

 private:
  uint8_t bits_ = 0;
};

// "viewer", "operator", "admin", "peer".
absl::string_view RoleName(Role role);
std::optional<Role> ParseRole(absl::string_view name);
// "viewer, operator, admin, peer": for error messages.
std::string AllowedRoleNames();

// How the agent treats one gRPC method.
struct MethodRule {
  // "/roced.v1.Agent/ApplyConfig", as grpc::ServerContext and the
  // descriptors spell it.
  absl::string_view full_name;
  // The role a caller needs (one of them).
  Role needs;
  // Recorded in the audit log: the calls that change the node or make it
  // do work for the caller.
  bool mutating;
};

// Every method of roced.v1.Agent and roced.v1.ProbePeer (a test checks the
// table against the services' descriptors both ways).
const std::vector<MethodRule>& MethodRules();
// The rule of `full_name`; nullptr for a method the table does not know.
const MethodRule* FindMethod(absl::string_view full_name);

// OK when `roles` allow `method`; PERMISSION_DENIED naming the method, the
// role it needs and the caller's roles otherwise (PERMISSION_DENIED too
// for a method the table does not know: nothing is served by default).
absl::Status Authorize(absl::string_view method, RoleSet roles, absl::string_view identity);

}  // namespace roced::access

// The access policy: which roles a caller gets. It is the agent's own
// setting (--access-file), never part of NodeConfig, so a config push
// cannot widen it.
//
//   apiVersion: roced/v1
//   kind: AccessPolicy
//   identities:                  # TLS callers, by client certificate
//     - match: "spiffe://fleet.example/controller"
//       roles: [admin]
//     - match: "*.nodes.example"   # '*' matches any run of characters
//       roles: [peer]
//   socket:                      # unix socket callers, by SO_PEERCRED
//     group_roles: [admin]       # root and --socket-group (default admin)
//     other_roles: []            # anyone else (default none)
//   insecure_roles: [admin, peer]  # TCP callers under --insecure
//
// A certificate's identities are its subject alternative names (DNS and
// URI) and its subject CN; a caller gets the roles of every entry matching
// any of them. Without an access file every identity the client CA vouches
// for is a viewer and nothing more.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/status/statusor.h"
#include "access/roles.h"

namespace roced::access {

inline constexpr size_t kMaxPolicyBytes = 64 << 10;
inline constexpr size_t kMaxPolicyEntries = 256;
inline constexpr size_t kMaxPatternBytes = 512;

struct IdentityRule {
  std::string match;
  RoleSet roles;
};

struct AccessPolicy {
  std::vector<IdentityRule> identities = {{"*", RoleSet::Of({Role::kViewer})}};
  RoleSet socket_group = RoleSet::Of({Role::kAdmin});
  RoleSet socket_other;
  RoleSet insecure = RoleSet::All();

  // The roles of a certificate with these identities (SANs, CN).
  RoleSet ForCertificate(const std::vector<std::string>& identities) const;
};

// Parses an access file's text. Errors name the field, its line and the
// allowed values; nothing is half-taken.
absl::StatusOr<AccessPolicy> ParseAccessPolicy(const std::string& text);
// Reads and parses FILE: opened once, a regular file, at most
// kMaxPolicyBytes read (util::ReadRegularFile); every error names the path.
absl::StatusOr<AccessPolicy> LoadAccessPolicy(const std::string& path);

// `pattern` against `value`: '*' matches any run of characters (none
// included), every other character itself.
bool GlobMatch(absl::string_view pattern, absl::string_view value);

}  // namespace roced::access

#include "access/policy.h"

#include <yaml-cpp/yaml.h>

#include "absl/strings/str_cat.h"
#include "util/status_macros.h"
#include "util/fs.h"

namespace roced::access {

bool GlobMatch(absl::string_view pattern, absl::string_view value) {
  // Iterative match with one backtrack point (the last '*'): linear in
  // practice, never exponential.
  size_t p = 0, v = 0, star = absl::string_view::npos, resume = 0;
  while (v < value.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = v;
    } else if (p < pattern.size() && pattern[p] == value[v]) {
      ++p;
      ++v;
    } else if (star != absl::string_view::npos) {
      p = star + 1;
      v = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

RoleSet AccessPolicy::ForCertificate(const std::vector<std::string>& ids) const {
  RoleSet roles;
  for (const IdentityRule& rule : identities) {
    for (const std::string& id : ids) {
      if (GlobMatch(rule.match, id)) {
        roles |= rule.roles;
        break;
      }
    }
  }
  return roles;
}

namespace {

std::string At(const YAML::Node& node) {
  return absl::StrCat(" (line ", node.Mark().line + 1, ")");
}

absl::Status Bad(const std::string& field, const YAML::Node& node, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(field, At(node), ": ", what));
}

absl::StatusOr<RoleSet> ParseRoles(const std::string& field, const YAML::Node& node) {
  if (!node.IsSequence()) return Bad(field, node, "must be a list of roles, e.g. [viewer]");
  RoleSet roles;
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string at = absl::StrCat(field, "[", i, "]");
    if (!node[i].IsScalar()) return Bad(at, node[i], "must be a role name");
    std::optional<Role> role = ParseRole(node[i].Scalar());
    if (!role) {
      return Bad(at, node[i], absl::StrCat("unknown role '", node[i].Scalar().substr(0, 64),
                                           "'; allowed: ", AllowedRoleNames()));
    }
    roles.Grant(*role);
  }
  return roles;
}

// Every key of `map` must be one of `known`.
absl::Status OnlyKeys(const std::string& field, const YAML::Node& map,
                      std::initializer_list<absl::string_view> known) {
  if (!map.IsMap()) return Bad(field.empty() ? "access policy" : field, map, "must be a mapping");
  for (const auto& kv : map) {
    const std::string key = kv.first.Scalar();
    bool ok = false;
    for (absl::string_view k : known) ok = ok || key == k;
    if (!ok) {
      std::string allowed;
      for (absl::string_view k : known) absl::StrAppend(&allowed, allowed.empty() ? "" : ", ", k);
      return Bad(absl::StrCat(field, field.empty() ? "" : ".", key.substr(0, 64)), kv.first,
                 absl::StrCat("unknown key; allowed: ", allowed));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<IdentityRule> ParseIdentity(const std::string& field, const YAML::Node& node) {
  if (absl::Status s = OnlyKeys(field, node, {"match", "roles"}); !s.ok()) return s;
  const YAML::Node match = node["match"];
  if (!match || !match.IsScalar() || match.Scalar().empty()) {
    return Bad(field + ".match", match ? match : node, "required: a certificate identity or a pattern with '*'");
  }
  if (match.Scalar().size() > kMaxPatternBytes) {
    return Bad(field + ".match", match, absl::StrCat("allowed at most ", kMaxPatternBytes, " bytes"));
  }
  if (!node["roles"]) return Bad(field + ".roles", node, "required: a list of roles");
  IdentityRule rule{match.Scalar(), {}};
  auto roles = ParseRoles(field + ".roles", node["roles"]);
  if (!roles.ok()) return roles.status();
  rule.roles = *roles;
  return rule;
}

absl::Status ParseSocket(const YAML::Node& node, AccessPolicy* policy) {
  if (absl::Status s = OnlyKeys("socket", node, {"group_roles", "other_roles"}); !s.ok()) return s;
  if (node["group_roles"]) {
    auto roles = ParseRoles("socket.group_roles", node["group_roles"]);
    if (!roles.ok()) return roles.status();
    policy->socket_group = *roles;
  }
  if (node["other_roles"]) {
    auto roles = ParseRoles("socket.other_roles", node["other_roles"]);
    if (!roles.ok()) return roles.status();
    policy->socket_other = *roles;
  }
  return absl::OkStatus();
}

absl::Status ParseHeader(const YAML::Node& root) {
  const YAML::Node api = root["apiVersion"];
  if (!api || api.Scalar() != "roced/v1") return Bad("apiVersion", api ? api : root, "must be roced/v1");
  const YAML::Node kind = root["kind"];
  if (!kind || kind.Scalar() != "AccessPolicy") return Bad("kind", kind ? kind : root, "must be AccessPolicy");
  return absl::OkStatus();
}

absl::Status ParseIdentities(const YAML::Node& node, AccessPolicy* policy) {
  if (!node.IsSequence()) return Bad("identities", node, "must be a list of {match, roles}");
  if (node.size() > kMaxPolicyEntries) {
    return Bad("identities", node, absl::StrCat(node.size(), " entries; allowed at most ", kMaxPolicyEntries));
  }
  policy->identities.clear();
  for (size_t i = 0; i < node.size(); ++i) {
    auto rule = ParseIdentity(absl::StrCat("identities[", i, "]"), node[i]);
    if (!rule.ok()) return rule.status();
    policy->identities.push_back(*std::move(rule));
  }
  return absl::OkStatus();
}

absl::StatusOr<AccessPolicy> ParseRoot(const YAML::Node& root) {
  RETURN_IF_ERROR(OnlyKeys("", root, {"apiVersion", "kind", "identities", "socket", "insecure_roles"}));
  RETURN_IF_ERROR(ParseHeader(root));
  AccessPolicy policy;
  // An access file states its identities: none listed grants none.
  policy.identities.clear();
  if (root["identities"]) RETURN_IF_ERROR(ParseIdentities(root["identities"], &policy));
  if (root["socket"]) RETURN_IF_ERROR(ParseSocket(root["socket"], &policy));
  if (root["insecure_roles"]) {
    auto roles = ParseRoles("insecure_roles", root["insecure_roles"]);
    if (!roles.ok()) return roles.status();
    policy.insecure = *roles;
  }
  return policy;
}

}  // namespace

absl::StatusOr<AccessPolicy> ParseAccessPolicy(const std::string& text) {
  if (text.size() > kMaxPolicyBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("access policy is ", text.size(), " bytes; allowed at most ", kMaxPolicyBytes));
  }
  // yaml-cpp resolves an alias to the anchored node without copying it,
  // and the schema is two levels deep: the size cap bounds the work.
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("access policy: line ", e.mark.line + 1, ": ", e.msg));
  }
  try {
    return ParseRoot(root);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("access policy: line ", e.mark.line + 1, ": ", e.msg));
  }
}

absl::StatusOr<AccessPolicy> LoadAccessPolicy(const std::string& path) {
  // Opened once, a regular file, at most kMaxPolicyBytes read; the error
  // names the file and the bound.
  auto text = util::ReadRegularFile(path, kMaxPolicyBytes, "access policy");
  if (!text.ok()) return text.status();
  auto policy = ParseAccessPolicy(*text);
  if (!policy.ok()) return absl::Status(policy.status().code(), absl::StrCat(path, ": ", policy.status().message()));
  return policy;
}

}  // namespace roced::access

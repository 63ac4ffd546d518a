#include "agent/serve/web_config.h"

#include <sys/stat.h>

#include <array>
#include <cerrno>
#include <filesystem>
#include <set>
#include <utility>

#include <yaml-cpp/yaml.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/escape.h"
#include "util/fs.h"
#include "util/status_macros.h"

namespace roced::agent {
namespace {

constexpr std::array<std::pair<absl::string_view, ClientAuth>, 5> kClientAuthNames = {{
    {"NoClientCert", ClientAuth::kNoClientCert},
    {"RequestClientCert", ClientAuth::kRequestClientCert},
    {"RequireAnyClientCert", ClientAuth::kRequireAnyClientCert},
    {"VerifyClientCertIfGiven", ClientAuth::kVerifyClientCertIfGiven},
    {"RequireAndVerifyClientCert", ClientAuth::kRequireAndVerifyClientCert},
}};
constexpr std::array<std::pair<absl::string_view, TlsVersion>, 4> kTlsVersionNames = {{
    {"TLS10", TlsVersion::kTls10},
    {"TLS11", TlsVersion::kTls11},
    {"TLS12", TlsVersion::kTls12},
    {"TLS13", TlsVersion::kTls13},
}};
constexpr absl::string_view kTopLevelKeys = "tls_server_config, basic_auth_users";
constexpr absl::string_view kTlsKeys =
    "cert_file, key_file, client_auth_type, client_ca_file, min_version, max_version";
// node_exporter options roced knows but does not implement: refused by name
// so nobody believes they are in force.
const std::set<std::string> kUnsupportedTlsKeys = {
    "cert", "key", "client_ca", "cipher_suites", "curve_preferences",
    "prefer_server_cipher_suites", "client_allowed_sans"};

absl::Status Error(const YAML::Node& node, absl::string_view field, absl::string_view what) {
  const YAML::Mark m = node.Mark();
  std::string where = m.is_null() ? "" : absl::StrCat("line ", m.line + 1, ", column ", m.column + 1, ": ");
  return absl::InvalidArgumentError(absl::StrCat(where, field, ": ", what));
}

template <typename Enum, std::size_t N>
std::string AllowedNames(const std::array<std::pair<absl::string_view, Enum>, N>& names) {
  std::vector<absl::string_view> v;
  for (const auto& [name, value] : names) v.push_back(name);
  return absl::StrJoin(v, ", ");
}

absl::StatusOr<std::string> Scalar(const YAML::Node& node, absl::string_view field) {
  if (!node.IsScalar()) return Error(node, field, "must be a string");
  return node.Scalar();
}

template <typename Enum, std::size_t N>
absl::StatusOr<Enum> ParseEnum(const YAML::Node& node, absl::string_view field,
                               const std::array<std::pair<absl::string_view, Enum>, N>& names) {
  ASSIGN_OR_RETURN(std::string s, Scalar(node, field));
  for (const auto& [name, value] : names) {
    if (s == name) return value;
  }
  return Error(node, field,
               absl::StrCat(util::Quoted(s), " is not one of ", AllowedNames(names)));
}

absl::StatusOr<std::string> ParsePath(const YAML::Node& node, absl::string_view field,
                                      const std::string& base_dir) {
  ASSIGN_OR_RETURN(std::string s, Scalar(node, field));
  if (s.empty()) return Error(node, field, "must be a file path, not empty");
  std::filesystem::path p(s);
  if (p.is_relative() && !base_dir.empty()) p = std::filesystem::path(base_dir) / p;
  return p.lexically_normal().string();
}

// Keys of a mapping, refusing duplicates (yaml-cpp keeps both).
absl::Status CheckKeys(const YAML::Node& map, absl::string_view prefix, absl::string_view allowed,
                       const std::set<std::string>& known, const std::set<std::string>& unsupported) {
  std::set<std::string> seen;
  for (const auto& kv : map) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
    const std::string field = absl::StrCat(prefix, key);
    if (!seen.insert(key).second) return Error(kv.first, field, "given twice");
    if (unsupported.count(key)) {
      return Error(kv.first, field,
                   absl::StrCat("is a node_exporter option roced does not support; remove it "
                                "(supported: ",
                                allowed, ")"));
    }
    if (!known.count(key)) {
      return Error(kv.first, prefix.empty() ? util::Quoted(key) : field,
                   absl::StrCat("unknown field (allowed: ", allowed, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckClientCa(const YAML::Node& tls, const TlsServerConfig& c) {
  const bool verifies = c.client_auth == ClientAuth::kVerifyClientCertIfGiven ||
                        c.client_auth == ClientAuth::kRequireAndVerifyClientCert;
  if (verifies && c.client_ca_file.empty()) {
    return Error(tls, "tls_server_config.client_ca_file",
                 absl::StrCat("required with client_auth_type ", ClientAuthName(c.client_auth),
                              " (the CA client certificates are verified against)"));
  }
  if (!verifies && !c.client_ca_file.empty()) {
    return Error(tls["client_ca_file"], "tls_server_config.client_ca_file",
                 absl::StrCat("is used only with client_auth_type VerifyClientCertIfGiven or "
                              "RequireAndVerifyClientCert, not ",
                              ClientAuthName(c.client_auth)));
  }
  return absl::OkStatus();
}

absl::StatusOr<TlsServerConfig> ParseTls(const YAML::Node& tls, const std::string& base_dir) {
  constexpr absl::string_view kField = "tls_server_config";
  if (tls.IsNull()) {
    return Error(tls, kField, "is empty: give cert_file and key_file, or remove the section for plain HTTP");
  }
  if (!tls.IsMap()) return Error(tls, kField, absl::StrCat("must be a mapping of ", kTlsKeys));
  RETURN_IF_ERROR(CheckKeys(tls, "tls_server_config.", kTlsKeys,
                            {"cert_file", "key_file", "client_auth_type", "client_ca_file",
                             "min_version", "max_version"},
                            kUnsupportedTlsKeys));
  TlsServerConfig c;
  for (const char* required : {"cert_file", "key_file"}) {
    if (!tls[required]) {
      return Error(tls, absl::StrCat(kField, ".", required), "required (a PEM file path)");
    }
  }
  ASSIGN_OR_RETURN(c.cert_file, ParsePath(tls["cert_file"], "tls_server_config.cert_file", base_dir));
  ASSIGN_OR_RETURN(c.key_file, ParsePath(tls["key_file"], "tls_server_config.key_file", base_dir));
  if (tls["client_auth_type"]) {
    ASSIGN_OR_RETURN(c.client_auth, ParseEnum(tls["client_auth_type"],
                                              "tls_server_config.client_auth_type", kClientAuthNames));
  }
  if (tls["client_ca_file"]) {
    ASSIGN_OR_RETURN(c.client_ca_file,
                     ParsePath(tls["client_ca_file"], "tls_server_config.client_ca_file", base_dir));
  }
  RETURN_IF_ERROR(CheckClientCa(tls, c));
  if (tls["min_version"]) {
    ASSIGN_OR_RETURN(c.min_version,
                     ParseEnum(tls["min_version"], "tls_server_config.min_version", kTlsVersionNames));
  }
  if (tls["max_version"]) {
    ASSIGN_OR_RETURN(c.max_version,
                     ParseEnum(tls["max_version"], "tls_server_config.max_version", kTlsVersionNames));
  }
  if (c.max_version < c.min_version) {
    return Error(tls["max_version"], "tls_server_config.max_version",
                 absl::StrCat(TlsVersionName(c.max_version), " is below min_version ",
                              TlsVersionName(c.min_version)));
  }
  return c;
}

absl::StatusOr<std::map<std::string, std::string>> ParseUsers(const YAML::Node& users) {
  constexpr absl::string_view kField = "basic_auth_users";
  if (users.IsNull() || (users.IsMap() && users.size() == 0)) {
    return Error(users, kField,
                 "is empty: give user: bcrypt-hash lines, or remove the section for no authentication");
  }
  if (!users.IsMap()) return Error(users, kField, "must be a mapping of user name to bcrypt hash");
  if (users.size() > kMaxBasicAuthUsers) {
    return Error(users, kField,
                 absl::StrCat(users.size(), " users; at most ", kMaxBasicAuthUsers, " are allowed"));
  }
  std::map<std::string, std::string> out;
  for (const auto& kv : users) {
    ASSIGN_OR_RETURN(std::string user, Scalar(kv.first, "basic_auth_users key"));
    const std::string field = absl::StrCat(kField, ".", util::EscapeForLog(user));
    // RFC 7617: the user-id cannot contain a colon; control characters
    // cannot be typed into a scrape config.
    if (user.empty() || user.find(':') != std::string::npos ||
        util::EscapeForLog(user) != user) {
      return Error(kv.first, field,
                   "user names must be non-empty printable ASCII without ':' (RFC 7617)");
    }
    if (out.count(user)) return Error(kv.first, field, "given twice");
    ASSIGN_OR_RETURN(std::string hash, Scalar(kv.second, field));
    if (!IsBcryptHash(hash)) {
      return Error(kv.second, field,
                   "not a bcrypt hash (allowed: $2a$, $2b$ or $2y$, a cost 04-31, '$' and 53 "
                   "characters; make one with `htpasswd -nbBC 10 USER PASSWORD`)");
    }
    out.emplace(std::move(user), std::move(hash));
  }
  return out;
}

}  // namespace

absl::string_view TlsVersionName(TlsVersion v) {
  for (const auto& [name, value] : kTlsVersionNames) {
    if (value == v) return name;
  }
  return "?";
}

absl::string_view ClientAuthName(ClientAuth a) {
  for (const auto& [name, value] : kClientAuthNames) {
    if (value == a) return name;
  }
  return "?";
}

bool IsBcryptHash(absl::string_view h) {
  if (h.size() != 60 || h[0] != '$' || h[1] != '2' || h[3] != '$' || h[6] != '$') return false;
  if (h[2] != 'a' && h[2] != 'b' && h[2] != 'y') return false;
  if (h[4] < '0' || h[4] > '9' || h[5] < '0' || h[5] > '9') return false;
  const int cost = (h[4] - '0') * 10 + (h[5] - '0');
  if (cost < 4 || cost > 31) return false;
  for (char c : h.substr(7)) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '/';
    if (!ok) return false;
  }
  return true;
}

absl::StatusOr<WebConfig> ParseWebConfig(absl::string_view text, const std::string& base_dir) {
  if (text.size() > kMaxWebConfigBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("web config is ", text.size(), " bytes; at most ", kMaxWebConfigBytes));
  }
  YAML::Node root;
  try {
    // The walk below visits only fixed, shallow fields, so an alias cannot
    // make it expand anything: the size bound is the whole bound.
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("not YAML: ", e.what()));
  }
  WebConfig config;
  if (!root || root.IsNull()) return config;  // empty file: plain HTTP, no auth
  if (!root.IsMap()) {
    return Error(root, "web config", absl::StrCat("must be a mapping of ", kTopLevelKeys));
  }
  RETURN_IF_ERROR(CheckKeys(root, "", kTopLevelKeys, {"tls_server_config", "basic_auth_users"},
                            {"http_server_config"}));
  if (root["tls_server_config"]) {
    ASSIGN_OR_RETURN(config.tls, ParseTls(root["tls_server_config"], base_dir));
  }
  if (root["basic_auth_users"]) {
    ASSIGN_OR_RETURN(config.basic_auth_users, ParseUsers(root["basic_auth_users"]));
  }
  return config;
}

absl::StatusOr<WebConfig> LoadWebConfig(const std::string& path) {
  // Opened once, a regular file, at most kMaxWebConfigBytes read.
  ASSIGN_OR_RETURN(std::string text, util::ReadRegularFile(path, kMaxWebConfigBytes, "web config"));
  std::string dir = std::filesystem::absolute(path).parent_path().string();
  absl::StatusOr<WebConfig> config = ParseWebConfig(text, dir);
  if (!config.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("web config ", path, ": ", config.status().message()));
  }
  return config;
}

}  // namespace roced::agent

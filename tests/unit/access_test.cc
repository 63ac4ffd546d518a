// lib/access: roles, the method table against the services' descriptors,
// the access policy file, and the certificate file checks (certificates
// made by openssl at test time).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "access/policy.h"
#include "access/roles.h"
#include "access/tls_files.h"
#include "google/protobuf/descriptor.h"
#include "roced/v1/agent.grpc.pb.h"
#include "roced/v1/peer.grpc.pb.h"
#include "test_certs.h"

namespace roced::access {
namespace {

using ::testing::HasSubstr;
using test_util::CertPath;

TEST(RoleSet, AdminHoldsOperatorAndViewerButNotPeer) {
  RoleSet admin = RoleSet::Of({Role::kAdmin});
  EXPECT_TRUE(admin.Has(Role::kViewer));
  EXPECT_TRUE(admin.Has(Role::kOperator));
  EXPECT_FALSE(admin.Has(Role::kPeer));
  RoleSet op = RoleSet::Of({Role::kOperator});
  EXPECT_TRUE(op.Has(Role::kViewer));
  EXPECT_FALSE(op.Has(Role::kAdmin));
  EXPECT_FALSE(RoleSet::Of({Role::kPeer}).Has(Role::kViewer));
  EXPECT_EQ(RoleSet().ToString(), "none");
  EXPECT_EQ(RoleSet::Of({Role::kViewer, Role::kPeer}).ToString(), "viewer,peer");
  EXPECT_EQ(RoleSet::All().ToString(), "admin,peer");
}

// Every method of both services has exactly one rule, and every rule names
// a method that exists: a new RPC cannot be served unchecked, and a typo in
// the table cannot leave a method without its rule.
TEST(MethodRules, CoverEveryMethodOfBothServicesAndNothingElse) {
  std::set<std::string> served;
  // Through a message of each file, so the generated code that registers
  // the file (and its service) is linked in whatever the link order.
  const std::pair<const char*, const google::protobuf::FileDescriptor*> services[] = {
      {"roced.v1.Agent", roced::v1::GetStateRequest::descriptor()->file()},
      {"roced.v1.ProbePeer", roced::v1::OpenEndpointRequest::descriptor()->file()},
  };
  for (const auto& [service, file] : services) {
    const auto* d = file->pool()->FindServiceByName(service);
    ASSERT_NE(d, nullptr) << service;
    for (int i = 0; i < d->method_count(); ++i) {
      const std::string full = "/" + std::string(service) + "/" + d->method(i)->name();
      served.insert(full);
      EXPECT_NE(FindMethod(full), nullptr) << full << " has no rule in access::MethodRules";
    }
  }
  std::set<std::string> ruled;
  for (const MethodRule& r : MethodRules()) {
    EXPECT_TRUE(served.count(std::string(r.full_name))) << r.full_name << " is not a method";
    EXPECT_TRUE(ruled.insert(std::string(r.full_name)).second) << r.full_name << " twice";
  }
}

TEST(Authorize, NamesTheMethodTheRoleNeededAndTheCallersRoles) {
  EXPECT_TRUE(Authorize("/roced.v1.Agent/GetState", RoleSet::Of({Role::kViewer}), "v").ok());
  absl::Status s = Authorize("/roced.v1.Agent/ApplyConfig", RoleSet::Of({Role::kOperator}), "oncall");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), "/roced.v1.Agent/ApplyConfig needs the admin role; oncall has operator");
  // Peers get the probe set-up and nothing of the Agent service, and the
  // Agent's roles get nothing of the probe set-up.
  EXPECT_TRUE(Authorize("/roced.v1.ProbePeer/OpenEndpoint", RoleSet::Of({Role::kPeer}), "p").ok());
  EXPECT_FALSE(Authorize("/roced.v1.Agent/GetState", RoleSet::Of({Role::kPeer}), "p").ok());
  EXPECT_FALSE(Authorize("/roced.v1.ProbePeer/OpenEndpoint", RoleSet::Of({Role::kAdmin}), "a").ok());
  // Unknown methods are refused whatever the roles.
  EXPECT_EQ(Authorize("/roced.v1.Agent/Nope", RoleSet::All(), "a").code(), absl::StatusCode::kPermissionDenied);
}

TEST(GlobMatch, StarMatchesAnyRunIncludingNone) {
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("*.nodes.example", "a.b.nodes.example"));
  EXPECT_FALSE(GlobMatch("*.nodes.example", "nodes.example"));
  EXPECT_TRUE(GlobMatch("spiffe://fleet/*", "spiffe://fleet/controller"));
  EXPECT_TRUE(GlobMatch("node-*-a", "node--a"));
  EXPECT_FALSE(GlobMatch("node-*-a", "node-1-b"));
  EXPECT_TRUE(GlobMatch("exact", "exact"));
  EXPECT_FALSE(GlobMatch("exact", "exactly"));
  EXPECT_TRUE(GlobMatch("a*b*c", "aXXbYYc"));
  // Backtracking stays linear: a long near-miss answers at once.
  EXPECT_FALSE(GlobMatch("*a*a*a*a*a*b", std::string(4096, 'a')));
}

TEST(AccessPolicy, WithoutAFileEveryCertificateIsAViewerOnly) {
  AccessPolicy p;
  EXPECT_EQ(p.ForCertificate({"anyone.example"}), RoleSet::Of({Role::kViewer}));
  EXPECT_EQ(p.socket_group, RoleSet::Of({Role::kAdmin}));
  EXPECT_TRUE(p.socket_other.empty());
}

TEST(AccessPolicy, ParsesIdentitiesSocketAndInsecureRolesAndUnitesMatches) {
  auto p = ParseAccessPolicy(R"(apiVersion: roced/v1
kind: AccessPolicy
identities:
  - match: "spiffe://fleet/controller"
    roles: [admin]
  - match: "*.nodes.example"
    roles: [peer]
  - match: "*"
    roles: [viewer]
socket:
  group_roles: [operator]
  other_roles: [viewer]
insecure_roles: [viewer]
)");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->ForCertificate({"spiffe://fleet/controller"}), RoleSet::Of({Role::kAdmin}));
  // A certificate's SANs and CN all count; roles of every match add up.
  EXPECT_EQ(p->ForCertificate({"n1.nodes.example", "n1"}), RoleSet::Of({Role::kPeer, Role::kViewer}));
  EXPECT_EQ(p->socket_group, RoleSet::Of({Role::kOperator}));
  EXPECT_EQ(p->socket_other, RoleSet::Of({Role::kViewer}));
  EXPECT_EQ(p->insecure, RoleSet::Of({Role::kViewer}));
}

TEST(AccessPolicy, AFileWithoutIdentitiesGrantsCertificatesNothing) {
  auto p = ParseAccessPolicy("apiVersion: roced/v1\nkind: AccessPolicy\n");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->ForCertificate({"anyone"}).empty());
}

TEST(AccessPolicy, BadFilesAreRefusedNamingTheFieldLineAndAllowedValues) {
  const std::string head = "apiVersion: roced/v1\nkind: AccessPolicy\n";
  struct Case {
    std::string text, expect;
  } cases[] = {
      {"apiVersion: v2\nkind: AccessPolicy\n", "apiVersion (line 1): must be roced/v1"},
      {head + "identites: []\n", "identites (line 3): unknown key; allowed: apiVersion, kind, identities"},
      {head + "identities:\n  - match: a\n    roles: [root]\n",
       "identities[0].roles[0] (line 5): unknown role 'root'; allowed: viewer, operator, admin, peer"},
      {head + "identities:\n  - roles: [admin]\n", "identities[0].match (line 4): required"},
      {head + "identities:\n  - match: a\n", "identities[0].roles (line 4): required"},
      {head + "identities:\n  - match: a\n    roles: admin\n", "identities[0].roles (line 5): must be a list"},
      {head + "socket:\n  group: [admin]\n", "socket.group (line 4): unknown key; allowed: group_roles, other_roles"},
      {head + "identities: [\n", "access policy: line"},
  };
  for (const Case& c : cases) {
    auto p = ParseAccessPolicy(c.text);
    ASSERT_FALSE(p.ok()) << c.text;
    EXPECT_THAT(std::string(p.status().message()), HasSubstr(c.expect)) << c.text;
  }
  std::string many = head + "identities:\n";
  for (size_t i = 0; i <= kMaxPolicyEntries; ++i) many += "  - {match: a, roles: [viewer]}\n";
  EXPECT_THAT(std::string(ParseAccessPolicy(many).status().message()),
              HasSubstr("257 entries; allowed at most 256"));
  EXPECT_THAT(std::string(ParseAccessPolicy(std::string(kMaxPolicyBytes + 1, '#')).status().message()),
              HasSubstr("allowed at most 65536"));
}

TEST(AccessPolicy, LoadNamesThePath) {
  auto missing = LoadAccessPolicy("/nonexistent/access.yaml");
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("/nonexistent/access.yaml: "));
}

TEST(TlsFiles, AGoodPairAndCaPass) {
  // The files first: making them takes a while, and the time to check
  // against must not be taken before they exist.
  const TlsFiles admin = test_util::ClientFiles("admin");
  absl::Status good = CheckTlsFiles(admin, {"--cert", "--key", "--ca"}, true, absl::Now());
  EXPECT_TRUE(good.ok()) << good;
  auto info = CheckCertificate("--cert", CertPath("uri.crt"), absl::Now());
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_THAT(info->identities, ::testing::ElementsAre("spiffe://roced.test/controller", "uri-cn.test"));
}

TEST(TlsFiles, EachProblemIsOneLineNamingTheFlagAndFile) {
  const TlsFlagNames names{"--cert", "--key", "--ca"};
  auto check = [&](TlsFiles f) { return std::string(CheckTlsFiles(f, names, false, absl::Now()).message()); };
  TlsFiles expired = test_util::ClientFiles("expired");
  EXPECT_THAT(check(expired), HasSubstr("--cert " + expired.cert + ": certificate /CN=expired.test expired on "));
  TlsFiles mismatch = test_util::ClientFiles("admin");
  mismatch.key = CertPath("viewer.key");
  EXPECT_THAT(check(mismatch), HasSubstr("--key " + mismatch.key + ": this key does not belong to the certificate"));
  TlsFiles missing = test_util::ClientFiles("admin");
  missing.cert = "/nonexistent.crt";
  EXPECT_THAT(check(missing), HasSubstr("--cert /nonexistent.crt: "));
  TlsFiles not_pem = test_util::ClientFiles("admin");
  not_pem.ca = std::string(ROCED_SOURCE_DIR) + "/README.md";
  EXPECT_THAT(check(not_pem), HasSubstr("--ca " + not_pem.ca + ": no CA certificate"));
  TlsFiles half = test_util::ClientFiles("admin");
  half.key.clear();
  EXPECT_THAT(check(half), HasSubstr("--cert and --key are required together"));
  EXPECT_THAT(check({}), HasSubstr("--ca is required with TLS"));
  // Not yet valid counts too.
  EXPECT_THAT(std::string(CheckCertificate("--cert", CertPath("admin.crt"), absl::Now() - absl::Hours(48))
                              .status()
                              .message()),
              HasSubstr("is not valid before"));
}

}  // namespace
}  // namespace roced::access

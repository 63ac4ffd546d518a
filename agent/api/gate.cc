#include "agent/api/gate.h"

#include <grpc/grpc_security_constants.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "metrics/families.h"
#include "util/escape.h"
#include "util/log.h"

namespace roced::agent {

absl::string_view TransportName(Caller::Transport t) {
  switch (t) {
    case Caller::Transport::kTls: return "tls";
    case Caller::Transport::kUnix: return "unix";
    case Caller::Transport::kInsecure: return "insecure";
    case Caller::Transport::kUnknown: break;
  }
  return "unknown";
}

absl::string_view CodeName(grpc::StatusCode code) {
  // absl's names are gRPC's (the numbering is shared).
  static const std::string* names = [] {
    auto* n = new std::string[17];
    for (int i = 0; i < 17; ++i) n[i] = absl::StatusCodeToString(static_cast<absl::StatusCode>(i));
    return n;
  }();
  const int i = static_cast<int>(code);
  return i >= 0 && i < 17 ? absl::string_view(names[i]) : absl::string_view("UNKNOWN");
}

Gate::Gate(GateOptions options, const UnixPeers* unix_peers, AuditLog* audit, prometheus::Registry* registry)
    : options_(std::move(options)), unix_peers_(unix_peers), audit_(audit) {
  if (registry != nullptr) {
    const metrics::ApiFamilies families = metrics::ApiFamilies::Register(*registry);
    requests_ = families.requests;
    if (audit_ != nullptr) audit_->RegisterMetrics(families.refusals);
  }
}

access::RoleSet Gate::RolesOf(const UnixPeer& peer) const {
  if (peer.uid == 0 || peer.InGroup(options_.socket_group)) return options_.policy.socket_group;
  return options_.policy.socket_other;
}

namespace {

std::vector<std::string> CertificateIdentities(const grpc::AuthContext& auth) {
  std::vector<std::string> ids;
  for (const char* property : {GRPC_X509_SAN_PROPERTY_NAME, GRPC_X509_CN_PROPERTY_NAME}) {
    for (const grpc::string_ref& v : auth.FindPropertyValues(property)) ids.emplace_back(v.data(), v.size());
  }
  return ids;
}

bool IsTls(const grpc::AuthContext& auth) {
  for (const grpc::string_ref& v : auth.FindPropertyValues(GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME)) {
    absl::string_view type(v.data(), v.size());
    if (type == GRPC_SSL_TRANSPORT_SECURITY_TYPE || type == GRPC_TLS_TRANSPORT_SECURITY_TYPE) return true;
  }
  return false;
}

}  // namespace

Caller Gate::Identify(const grpc::ServerContext& context) const {
  Caller caller;
  const std::string peer = context.peer();
  if (std::optional<int> fd = UnixPeers::FdOf(peer)) {
    caller.transport = Caller::Transport::kUnix;
    std::optional<UnixPeer> who = unix_peers_ ? unix_peers_->Get(*fd) : std::nullopt;
    if (!who) {
      caller.identity = "unix ?";
      caller.identified = absl::UnauthenticatedError("unix socket caller without credentials");
      return caller;
    }
    caller.identity = absl::StrCat("unix ", who->ToString());
    caller.roles = RolesOf(*who);
    return caller;
  }
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth != nullptr && IsTls(*auth)) {
    caller.transport = Caller::Transport::kTls;
    std::vector<std::string> ids = CertificateIdentities(*auth);
    if (!auth->IsPeerAuthenticated() || ids.empty()) {
      caller.identity = absl::StrCat("tls ", peer, " (no client certificate)");
      caller.identified = absl::UnauthenticatedError(
          "no client certificate: over TCP the agent takes calls only with a certificate signed by its "
          "--tls-client-ca");
      return caller;
    }
    caller.identity = ids.front();
    caller.roles = options_.policy.ForCertificate(ids);
    return caller;
  }
  // Without the port: one plaintext caller's connections count as one
  // (the responder's per-caller share).
  caller.identity = absl::StrCat("insecure ", peer.substr(0, peer.rfind(':')));
  if (!options_.insecure) {
    caller.identified = absl::UnauthenticatedError("plaintext callers are not accepted");
    return caller;
  }
  caller.transport = Caller::Transport::kInsecure;
  caller.roles = options_.policy.insecure;
  return caller;
}

grpc::Status Gate::Serve(grpc::ServerContext* context, absl::string_view method, const Handler& handler) {
  const Caller caller = Identify(*context);
  const access::MethodRule* rule = access::FindMethod(method);
  const bool mutating = rule == nullptr || rule->mutating;
  AuditNote note;
  absl::Status allowed = caller.identified;
  if (allowed.ok()) allowed = access::Authorize(method, caller.roles, util::EscapeForLog(caller.identity, 128));
  const bool tcp = caller.transport == Caller::Transport::kTls || caller.transport == Caller::Transport::kInsecure;
  if (allowed.ok() && tcp && limits_ != nullptr) {
    // Refused at once, before the handler does any work; logged by the
    // limits once per episode, not per call (a stalling caller retries).
    allowed = limits_->Admit(context, caller.identity);
    if (!allowed.ok()) {
      grpc::Status refused(grpc::StatusCode::RESOURCE_EXHAUSTED, std::string(allowed.message()));
      Record(caller, method, refused, note, mutating);
      return refused;
    }
  }
  if (!allowed.ok()) {
    grpc::Status refused(static_cast<grpc::StatusCode>(allowed.code()), std::string(allowed.message()));
    // Counted here; its record and WARN line are the audit log's, aggregated
    // and rate-limited there (refusals.log), apart from the changes.
    Record(caller, method, refused, note, /*mutating=*/false);
    if (audit_ != nullptr) {
      audit_->Refuse({absl::Now(), caller.identity, std::string(TransportName(caller.transport)),
                      caller.identified.ok() ? caller.roles.ToString() : "none", std::string(method), std::string(CodeName(refused.error_code())), refused.error_message(), 0, ""});
    }
    return refused;
  }
  grpc::Status status = handler(caller, &note);
  Record(caller, method, status, note, mutating);
  return status;
}

void Gate::Record(const Caller& caller, absl::string_view method, const grpc::Status& status,
                  const AuditNote& note, bool mutating) {
  const std::string roles = caller.identified.ok() ? caller.roles.ToString() : "none";
  const absl::string_view code = CodeName(status.error_code());
  if (requests_ != nullptr) {
    // An unknown method name is a caller's string: one label value for all.
    const absl::string_view label = access::FindMethod(method) ? method.substr(1) : "unknown";
    requests_->Add({{"method", std::string(label)}, {"code", std::string(code)}, {"role", roles}}).Increment();
  }
  if (!mutating || audit_ == nullptr) return;
  audit_->Append({absl::Now(), caller.identity, std::string(TransportName(caller.transport)), roles,
                  std::string(method), std::string(code), status.error_message(), note.generation, note.summary});
}

}  // namespace roced::agent

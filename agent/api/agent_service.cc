#include "agent/api/agent_service.h"

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/runtimes/confirm_guard.h"
#include "agent/runtimes/mesh_runtime.h"
#include "model/confirm_policy.h"
#include "model/validate.h"
#include "util/status_macros.h"
#include "util/escape.h"
#include "util/log.h"

namespace roced::agent {

namespace {
constexpr char kRunProbe[] = "/roced.v1.Agent/RunProbe";
constexpr char kListProbeResults[] = "/roced.v1.Agent/ListProbeResults";
constexpr char kListMeshResults[] = "/roced.v1.Agent/ListMeshResults";

grpc::Status ProbesNotReady() { return grpc::Status(grpc::StatusCode::UNAVAILABLE, "probes not ready"); }

// What an ApplyConfig request must pass before the agent looks at any
// entry of it: the config's count caps and a normalized confirm_timeout.
absl::Status CheckApplyBounds(const roced::v1::ApplyConfigRequest& request) {
  std::vector<roced::v1::ValidationIssue> issues;
  if (!model::CheckConfigBounds(request.config(), &issues)) {
    return absl::InvalidArgumentError(absl::StrCat("config rejected: ", model::ErrorSummary(issues)));
  }
  if (std::optional<std::string> problem = model::DurationProblem(request.confirm_timeout())) {
    return absl::InvalidArgumentError(absl::StrCat("confirm_timeout: ", *problem));
  }
  return absl::OkStatus();
}

// A name a caller sends (a filter, a check name): at most `max` bytes, no
// control characters, so that errors and logs quoting it stay one short line.
absl::Status CheckName(const std::string& field, const std::string& name, size_t max) {
  if (name.size() > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", name.size(), " bytes long; allowed at most ", max));
  }
  for (unsigned char ch : name) {
    if (ch < 0x20 || ch == 0x7f) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": ", util::Quoted(name), " has a control character"));
    }
  }
  return absl::OkStatus();
}

// RDMA device names (IB_DEVICE_NAME_MAX 64 with the NUL), netdev names
// (IFNAMSIZ 16 with the NUL), check names (the longest is under 40).
constexpr size_t kMaxDeviceName = 63;
constexpr size_t kMaxNetdevName = 15;
constexpr size_t kMaxCheckName = 64;
}  // namespace

namespace {
constexpr char kApplyConfig[] = "/roced.v1.Agent/ApplyConfig";
constexpr char kConfirmConfig[] = "/roced.v1.Agent/ConfirmConfig";
constexpr char kRollbackConfig[] = "/roced.v1.Agent/RollbackConfig";
constexpr char kGetState[] = "/roced.v1.Agent/GetState";
constexpr char kWatchState[] = "/roced.v1.Agent/WatchState";
constexpr char kGetCounters[] = "/roced.v1.Agent/GetCounters";
constexpr char kDiagnose[] = "/roced.v1.Agent/Diagnose";

// The plan of an apply, for the audit record: "eth0 qos.pfc: 3 -> 3,4; ...".
std::string PlanSummary(const roced::v1::ApplyConfigRequest& request,
                        const roced::v1::ApplyConfigResponse& response) {
  std::string out = request.dry_run() ? "dry run; " : "";
  if (response.plan().steps().empty()) absl::StrAppend(&out, "no changes");
  for (const auto& step : response.plan().steps()) {
    if (out.size() > 1024) {
      absl::StrAppend(&out, "; ...");
      break;
    }
    absl::StrAppend(&out, out.empty() || absl::EndsWith(out, "; ") ? "" : "; ", step.object(), " ", step.field(),
                    ": ", step.current(), " -> ", step.wanted());
  }
  if (!request.dry_run() && response.has_result() && !response.result().success()) {
    absl::StrAppend(&out, response.result().rolled_back() ? " (failed, rolled back)" : " (failed)");
  }
  return out;
}
}  // namespace

absl::StatusOr<roced::v1::ConfirmBaseline> AgentService::TakeBaseline(const roced::v1::ConfirmPolicy& policy) const {
  // Validated first, so a bad policy is INVALID_ARGUMENT whatever the
  // agent has.
  RETURN_IF_ERROR(model::ValidateConfirmPolicy(policy));
  if (confirm_ == nullptr) {
    return absl::FailedPreconditionError("confirm_policy: this agent does not judge confirm policies");
  }
  return confirm_->TakeBaseline(policy);
}

grpc::Status AgentService::ApplyConfig(grpc::ServerContext* context,
                                       const roced::v1::ApplyConfigRequest* request,
                                       roced::v1::ApplyConfigResponse* response) {
  return gate_->Serve(context, kApplyConfig, [&](const Caller& caller, AuditNote* note) {
    if (absl::Status bounds = CheckApplyBounds(*request); !bounds.ok()) {
      LOG_WARNING << "ApplyConfig from " << util::EscapeForLog(caller.identity, 128) << " refused: "
                  << util::EscapeForLog(bounds.message(), 1024);
      return ToGrpc(bounds);
    }
    roced::v1::ConfirmBaseline baseline;
    if (request->has_confirm_policy() && !request->dry_run()) {
      absl::StatusOr<roced::v1::ConfirmBaseline> b = TakeBaseline(request->confirm_policy());
      if (!b.ok()) return ToGrpc(b.status());
      baseline = *std::move(b);
    }
    auto result = agent_->ApplyConfig(*request, caller.identity, baseline);
    if (!result.ok()) return ToGrpc(result.status());
    *response = *std::move(result);
    note->generation = response->generation();
    note->summary = PlanSummary(*request, *response);
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::ConfirmConfig(grpc::ServerContext* context,
                                         const roced::v1::ConfirmConfigRequest* request,
                                         roced::v1::ConfirmConfigResponse* response) {
  return gate_->Serve(context, kConfirmConfig, [&](const Caller& caller, AuditNote* note) {
    note->generation = request->generation();
    auto generation = agent_->ConfirmConfig(request->generation(), caller.identity);
    if (!generation.ok()) return ToGrpc(generation.status());
    response->set_generation(*generation);
    note->generation = *generation;
    note->summary = absl::StrCat("confirmed generation ", *generation);
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::RollbackConfig(grpc::ServerContext* context,
                                          const roced::v1::RollbackConfigRequest* request,
                                          roced::v1::RollbackConfigResponse* response) {
  return gate_->Serve(context, kRollbackConfig, [&](const Caller& caller, AuditNote* note) {
    note->generation = request->generation();
    auto rollback = agent_->RollBackNow(request->generation(), caller.identity);
    if (!rollback.ok()) return ToGrpc(rollback.status());
    *response->mutable_rollback() = *rollback;
    note->generation = rollback->returned_to();
    note->summary = absl::StrCat("rolled back provisional generation ", rollback->generation(), " to generation ",
                                 rollback->returned_to());
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::GetState(grpc::ServerContext* context, const roced::v1::GetStateRequest*,
                                    roced::v1::NodeState* response) {
  return gate_->Serve(context, kGetState, [&](const Caller&, AuditNote*) {
    *response = agent_->State();
    if (probes_ != nullptr) {
      for (auto& summary : probes_->Summaries()) *response->add_probes() = std::move(summary);
    }
    if (lldp_ != nullptr) {
      for (auto& n : lldp_->Neighbors()) *response->add_lldp_neighbors() = std::move(n);
    }
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::WatchState(grpc::ServerContext* context,
                                      const roced::v1::WatchStateRequest* request,
                                      grpc::ServerWriter<roced::v1::StateEvent>* writer) {
  return gate_->Serve(context, kWatchState, [&](const Caller& caller, AuditNote*) {
    return Watch(context, caller, *request, writer);
  });
}

grpc::Status AgentService::Watch(grpc::ServerContext* context, const Caller& caller,
                                 const roced::v1::WatchStateRequest& request,
                                 grpc::ServerWriter<roced::v1::StateEvent>* writer) {
  // Subscribe before taking the snapshot so no change falls between them.
  auto sub = agent_->Subscribe();
  if (sub == nullptr) {
    LOG_WARNING << "WatchState from " << util::EscapeForLog(caller.identity, 128) << " refused: "
                << EventBus::kMaxSubscribers << " streams are open";
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        absl::StrCat("too many WatchState streams: at most ", EventBus::kMaxSubscribers,
                                     " may be open at once"));
  }
  if (!request.skip_initial_state()) {
    roced::v1::StateEvent first;
    *first.mutable_state() = agent_->State();
    *first.mutable_at() = first.state().observed_at();
    if (!writer->Write(first)) {
      agent_->Unsubscribe(sub);
      return grpc::Status::OK;
    }
  }
  roced::v1::StateEvent event;
  while (!context->IsCancelled() && !shutting_down_.load() && !sub->closed()) {
    if (!sub->Next(&event, absl::Milliseconds(250))) continue;
    if (!writer->Write(event)) break;
  }
  agent_->Unsubscribe(sub);
  if (shutting_down_.load()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "agent is stopping");
  return grpc::Status::OK;
}

grpc::Status ReadCounters(CountersRuntime* counters, const roced::v1::GetCountersRequest& request,
                          roced::v1::GetCountersResponse* response) {
  if (counters == nullptr) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "counters not ready");
  if (absl::Status s = CheckName("device", request.device(), kMaxDeviceName); !s.ok()) return ToGrpc(s);
  if (absl::Status s = CheckName("netdev", request.netdev(), kMaxNetdevName); !s.ok()) return ToGrpc(s);
  absl::StatusOr<roced::v1::GetCountersResponse> read = counters->GetCounters(request);
  if (!read.ok()) return ToGrpc(read.status());
  *response = *std::move(read);
  return grpc::Status::OK;
}

grpc::Status AgentService::GetCounters(grpc::ServerContext* context,
                                       const roced::v1::GetCountersRequest* request,
                                       roced::v1::GetCountersResponse* response) {
  return gate_->Serve(context, kGetCounters,
                      [&](const Caller&, AuditNote*) { return ReadCounters(counters_, *request, response); });
}

grpc::Status AgentService::Diagnose(grpc::ServerContext* context, const roced::v1::DiagnoseRequest* request,
                                    roced::v1::DiagnoseResponse* response) {
  return gate_->Serve(context, kDiagnose, [&](const Caller&, AuditNote*) { return RunDiagnose(*request, response); });
}

grpc::Status AgentService::RunDiagnose(const roced::v1::DiagnoseRequest& request,
                                       roced::v1::DiagnoseResponse* response) {
  // Each check runs once whatever the request repeats; more names than
  // there are checks is a malformed request.
  const size_t max_checks = diagnose::Checks().size();
  if (static_cast<size_t>(request.checks_size()) > max_checks) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("checks: ", request.checks_size(), " names; allowed at most ",
                                     max_checks, " (one per check)"));
  }
  for (int i = 0; i < request.checks_size(); ++i) {
    absl::Status s = CheckName(absl::StrCat("checks[", i, "]"), request.checks(i), kMaxCheckName);
    if (!s.ok()) return ToGrpc(s);
  }
  diagnose::Inputs in = agent_->DiagnoseInputs();
  if (probes_ != nullptr) {
    for (const auto& s : probes_->Summaries()) *in.state.add_probes() = s;
    in.probe_baselines = probes_->Baselines();
  }
  if (counters_ != nullptr) {
    in.congestion = counters_->CongestionWindowNow();
    in.link_flaps = counters_->LinkFlaps();
  }
  if (lldp_ != nullptr) {
    for (auto& n : lldp_->Neighbors()) *in.state.add_lldp_neighbors() = std::move(n);
  }
  diagnose::GatherRoutes(&in);
  std::vector<diagnose::SkippedCheck> skipped;
  const std::vector<std::string> only(request.checks().begin(), request.checks().end());
  auto findings = diagnose::Run(in, only, &skipped);
  if (!findings.ok()) return ToGrpc(findings.status());
  for (auto& f : *findings) *response->add_findings() = std::move(f);
  for (const auto& k : skipped) {
    roced::v1::SkippedCheck* out = response->add_skipped();
    out->set_check(k.check);
    out->set_reason(k.reason);
  }
  const size_t asked = only.empty() ? diagnose::Checks().size() : std::set<std::string>(only.begin(), only.end()).size();
  response->set_checks_run(static_cast<uint32_t>(asked - skipped.size()));
  return grpc::Status::OK;
}

grpc::Status AgentService::RunProbe(grpc::ServerContext* context, const roced::v1::RunProbeRequest* request,
                                    roced::v1::ProbeResult* response) {
  return gate_->Serve(context, kRunProbe, [&](const Caller& caller, AuditNote* note) {
    note->summary = absl::StrCat(roced::v1::ProbeKind_Name(request->kind()), " to ",
                                 util::Quoted(request->peer()));
    if (probes_ == nullptr) return ProbesNotReady();
    // An operator probes the peers the config names; any other address is
    // traffic the agent would send anywhere, which needs admin.
    if (!caller.roles.Has(access::Role::kAdmin) && !probes_->IsConfiguredPeer(request->peer())) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          absl::StrCat("/roced.v1.Agent/RunProbe to ", util::Quoted(request->peer()),
                                       ", which is not a peer of the config, needs the admin role; ",
                                       util::EscapeForLog(caller.identity, 128), " has ",
                                       caller.roles.ToString()));
    }
    absl::StatusOr<roced::v1::ProbeResult> result = probes_->RunProbe(*request);
    if (!result.ok()) return ToGrpc(result.status());
    *response = *std::move(result);
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::ListProbeResults(grpc::ServerContext* context,
                                            const roced::v1::ListProbeResultsRequest* request,
                                            roced::v1::ListProbeResultsResponse* response) {
  return gate_->Serve(context, kListProbeResults, [&](const Caller&, AuditNote*) {
    if (probes_ == nullptr) return ProbesNotReady();
    for (auto& r : probes_->ListResults(*request)) *response->add_results() = std::move(r);
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::ListMeshResults(grpc::ServerContext* context,
                                           const roced::v1::ListMeshResultsRequest* request,
                                           roced::v1::ListMeshResultsResponse* response) {
  return gate_->Serve(context, kListMeshResults, [&](const Caller&, AuditNote*) {
    if (mesh_ == nullptr) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "the mesh is off: start roced with --mesh-inventory FILE or --mesh-dns NAME:PORT");
    }
    absl::StatusOr<roced::v1::ListMeshResultsResponse> list = mesh_->List(*request);
    if (!list.ok()) return ToGrpc(list.status());
    *response = *std::move(list);
    return grpc::Status::OK;
  });
}

}  // namespace roced::agent

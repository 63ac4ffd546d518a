#include "agent/core/agent.h"

#include <cstdlib>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/core/config_checks.h"
#include "agent/core/config_lifecycle.h"
#include "agent/core/device_refresh.h"
#include "agent/core/state_events.h"
#include "google/protobuf/util/message_differencer.h"
#include "google/protobuf/util/time_util.h"
#include "hal/hugepage_pools.h"
#include "model/confirm_policy.h"
#include "model/defaults.h"
#include "model/validate.h"
#include "reconcile/journal.h"
#include "reconcile/observed_qos.h"
#include "reconcile/plan.h"
#include "util/escape.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/proto_time.h"
#include "util/status_macros.h"

namespace roced::agent {

using google::protobuf::util::TimeUtil;
using util::FromProto;

namespace {

roced::v1::Mode EffectiveMode(roced::v1::Mode m) {
  return m == roced::v1::MODE_OBSERVE ? roced::v1::MODE_OBSERVE : roced::v1::MODE_ENFORCE;
}

// What `config` changes besides the plan's steps, against the config in
// force (`accepted`, its fields as the last pass saw them in `in_force`):
// managed fields it cannot hold, fields it stops managing, a mode change.
void NoteWholeDifference(const roced::v1::NodeConfig& config, const reconcile::Plan& plan,
                         const roced::v1::AcceptedConfig& accepted,
                         const google::protobuf::RepeatedPtrField<roced::v1::FieldStatus>& in_force,
                         roced::v1::ApplyConfigResponse* response) {
  std::set<std::pair<std::string, std::string>> managed;
  for (const auto& f : plan.fields) {
    managed.emplace(f.object(), f.field());
    if (f.sync() == roced::v1::FIELD_SYNC_UNSUPPORTED || f.sync() == roced::v1::FIELD_SYNC_NOT_MANAGEABLE) {
      *response->add_not_held() = f;
    }
  }
  if (accepted.generation() == 0) return;  // nothing in force to compare with
  for (const auto& f : in_force) {
    if (!managed.count({f.object(), f.field()})) *response->add_no_longer_managed() = f;
  }
  const roced::v1::Mode before = EffectiveMode(accepted.config().mode());
  const roced::v1::Mode after = EffectiveMode(config.mode());
  if (before != after) {
    response->set_mode_before(before);
    response->set_mode_after(after);
  }
}

reconcile::NodeIo* RequiredIo(const AgentOptions& options) {
  if (options.backends.node_io == nullptr) {
    LOG_ERROR << "Agent: AgentOptions.backends.node_io is required (build NodeBackends)";
    std::abort();
  }
  return options.backends.node_io;
}

}  // namespace

Agent::Agent(AgentOptions options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : util::RealClock()),
      state_dir_(options_.state_dir),
      discovery_(options_.paths, options_.backends.verbs),
      registry_(options_.registry != nullptr ? options_.registry : std::make_shared<prometheus::Registry>()),
      metrics_(RegisterAgentMetrics(*registry_)),
      io_(RequiredIo(options_)),
      enforcer_(io_, [this](const std::string& nd) { return NetdevExists(nd); },
                {.backoff = options_.resource_backoff, .apply = {}}),
      restore_(&state_dir_),
      discovery_loop_({"roced-discover", "periodic", false, clock_}, [this] { return options_.discovery_interval; },
                      [this](const std::string& reason) { RefreshDevices(reason); }),
      reconcile_loop_({"roced-reconcile", "periodic", false, clock_}, [this] { return ReconcileWait(); },
                      [this](const std::string& reason) { ReconcilePass(reason); }) {}

Agent::~Agent() { Stop(); }

void Agent::SetComponentHealth(const std::string& name, bool healthy, const std::string& message) {
  published_.SetComponentHealth(name, healthy, message);
}

roced::v1::NodeState Agent::State() const { return published_.Snapshot(); }

void Agent::RecordConfigError(const std::string& error) {
  published_.SetConfigError(error);
  Publish(ConfigRejectedEvent(error));
}

bool Agent::RestoreLocked(const std::string& reason) {
  std::optional<roced::v1::ApplyResult> result = restore_.Run(reason, io_);
  if (!result) return true;
  metrics_.reconcile_runs->Add({{"result", result->success() ? "restore" : "failure"}}).Increment();
  Publish(ReconcileEvent(accepted_.generation(), *result));
  return result->success();
}

absl::Status Agent::RollBackProvisionalLocked(roced::v1::ConfigRollback why) {
  const std::string reason = why.reason();
  restore_.Add(reason == model::kReasonConfirmTimeout ? "confirm-timeout rollback"
               : reason == model::kReasonRollback     ? "requested rollback"
                                                      : "confirm-gate rollback",
               std::vector<roced::v1::PriorValue>(accepted_.prior().begin(), accepted_.prior().end()));
  *why.mutable_at() = util::ToProto(clock_->Now());
  RETURN_IF_ERROR(Accept(ReturnFromProvisional(accepted_, std::move(why)), Persist::kBestEffort));
  metrics_.config_rollbacks->Add({{"reason", reason}}).Increment();
  return absl::OkStatus();
}

absl::Status Agent::RollBackProvisional(uint64_t generation, const std::string& reason, const std::string& detail) {
  std::lock_guard<std::mutex> rlock(reconcile_mu_);
  if (!accepted_.provisional() || accepted_.generation() != generation) {
    return absl::FailedPreconditionError(absl::StrCat("generation ", generation, " is not the pending provisional one (",
                                                      accepted_.generation(), accepted_.provisional() ? ")" : ", permanent)"));
  }
  LOG_WARNING << "provisional generation " << generation << " failed its confirm policy (" << detail
              << "); rolling back to the previous config";
  roced::v1::ConfigRollback why;
  why.set_reason(reason);
  why.set_detail(detail);
  RETURN_IF_ERROR(RollBackProvisionalLocked(std::move(why)));
  ReconcileLocked("confirm gate failed", /*config_change=*/true);
  return absl::OkStatus();
}

absl::StatusOr<roced::v1::ConfigRollback> Agent::RollBackNow(uint64_t generation, const std::string& identity) {
  std::lock_guard<std::mutex> rlock(reconcile_mu_);
  if (!accepted_.provisional()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no provisional config to roll back (generation ", accepted_.generation(), " is permanent)"));
  }
  if (generation != 0 && generation != accepted_.generation()) {
    return absl::AbortedError(
        absl::StrCat("generation ", generation, " is not the pending one (", accepted_.generation(), ")"));
  }
  const std::string who = identity.empty() ? "" : util::EscapeForLog(identity, 128);
  LOG_WARNING << "provisional generation " << accepted_.generation() << " rolled back on request"
              << (who.empty() ? "" : " of " + who);
  roced::v1::ConfigRollback why;
  why.set_reason(model::kReasonRollback);
  why.set_detail(who.empty() ? "a RollbackConfig call" : absl::StrCat("asked by ", who));
  RETURN_IF_ERROR(RollBackProvisionalLocked(std::move(why)));
  ReconcileLocked("rollback", /*config_change=*/true);
  return accepted_.last_rollback();
}

bool Agent::SetConfirmGates(uint64_t generation, const std::vector<roced::v1::GateStatus>& gates) {
  return published_.SetGates(generation, gates);
}

absl::Status Agent::Accept(roced::v1::AcceptedConfig accepted, Persist persist) {
  model::ApplyDefaults(accepted.mutable_config());
  // The last rollback stays on record across configs (a rollout reads it).
  if (!accepted.has_last_rollback() && accepted_.has_last_rollback()) {
    *accepted.mutable_last_rollback() = accepted_.last_rollback();
  }
  accepted.set_generation(accepted_.generation() + 1);
  *accepted.mutable_accepted_at() = util::ToProto(clock_->Now());
  absl::Status saved = state_dir_.SaveAccepted(accepted);
  RecordPersist(saved);
  if (!saved.ok()) {
    if (persist == Persist::kRequired) {
      return absl::UnavailableError(absl::StrCat("cannot persist the accepted config: ", saved.message()));
    }
    LOG_WARNING << "generation " << accepted.generation() << " is in force but not persisted: " << saved.message();
  }
  accepted_ = accepted;
  if (accepted_.provisional()) confirm_clock_.Arm(FromProto(accepted_.confirm_deadline()));
  published_.SetAccepted(accepted);
  Publish(ConfigAcceptedEvent(accepted));
  LOG_INFO << "accepted config generation " << accepted.generation() << " from "
           << roced::v1::ConfigSource_Name(accepted.source()) << (accepted.provisional() ? " (provisional)" : "");
  return absl::OkStatus();
}

absl::StatusOr<roced::v1::ApplyConfigResponse> Agent::ApplyConfig(const roced::v1::ApplyConfigRequest& request,
                                                                 const std::string& identity,
                                                                 const roced::v1::ConfirmBaseline& baseline) {
  std::vector<roced::v1::ValidationIssue> issues;
  ASSIGN_OR_RETURN(const absl::Duration confirm, CheckApplyRequest(options_.paths, request, &issues));
  std::lock_guard<std::mutex> rlock(reconcile_mu_);
  if (request.has_expected_generation() && request.expected_generation() != accepted_.generation()) {
    return absl::AbortedError(absl::StrCat("stale writer: expected generation ", request.expected_generation(),
                                           " but the accepted generation is ", accepted_.generation()));
  }
  // The new config is the newest deliberate change: it supersedes a
  // restore that keeps failing (the failure stays in the log and events).
  if (!request.dry_run() && !RestoreLocked("before ApplyConfig")) restore_.Drop();
  roced::v1::ApplyConfigResponse response;
  for (const auto& w : issues) *response.add_warnings() = w;
  return ApplyLocked(request, identity, confirm, baseline, std::move(response));
}

absl::StatusOr<roced::v1::ApplyConfigResponse> Agent::ApplyLocked(const roced::v1::ApplyConfigRequest& request,
                                                                  const std::string& identity,
                                                                  absl::Duration confirm,
                                                                  const roced::v1::ConfirmBaseline& baseline,
                                                                  roced::v1::ApplyConfigResponse response) {
  roced::v1::NodeConfig config = request.config();
  model::ApplyDefaults(&config);
  ASSIGN_OR_RETURN(reconcile::Prepared prepared, enforcer_.Prepare(config, published_.Devices()));
  const reconcile::Plan& plan = prepared.plan;
  for (const auto& step : plan.steps) *response.mutable_plan()->add_steps() = reconcile::ToProto(step);
  NoteWholeDifference(config, plan, accepted_, published_.Snapshot().fields(), &response);
  response.set_generation(accepted_.generation());
  response.mutable_result()->set_success(true);
  if (request.dry_run()) {
    response.clear_result();
    return response;
  }
  // Re-sending the config in force changes nothing, not even the
  // generation (a controller that re-pushes on every sync loop would
  // otherwise make generations meaningless).
  if (plan.empty() && confirm == absl::ZeroDuration() && !accepted_.provisional() &&
      accepted_.source() == roced::v1::CONFIG_SOURCE_GRPC &&
      google::protobuf::util::MessageDifferencer::Equals(accepted_.config(), config)) {
    return response;
  }
  std::vector<roced::v1::PriorValue> prior;
  const bool writes = config.mode() == roced::v1::MODE_ENFORCE && !plan.empty();
  if (writes) prior = reconcile::PriorValues(plan, prepared.targets);
  // What is accepted must be storable, checked before the node is touched.
  roced::v1::AcceptedConfig next =
      AcceptFromApply(accepted_, options_.config_path, config, confirm, clock_->Now(), prior);
  next.set_applied_by(identity);
  if (request.has_confirm_policy()) {
    *next.mutable_confirm_policy() = request.confirm_policy();
    *next.mutable_baseline() = baseline;
  }
  RETURN_IF_ERROR(StateDir::CheckStorable(next));
  if (writes) {
    // Before the node is touched: an agent killed during the apply writes
    // these back at start-up.
    if (absl::Status s = state_dir_.WriteJournal(accepted_.generation() + 1, "ApplyConfig", prior); !s.ok()) {
      RecordPersist(s);
      return absl::UnavailableError(absl::StrCat("cannot journal the apply, nothing changed: ", s.message()));
    }
    *response.mutable_result() = enforcer_.Apply(prepared);
    if (!response.result().success()) {
      state_dir_.RemoveJournal();
      metrics_.reconcile_runs->Add({{"result", "failure"}}).Increment();
      return response;
    }
  }
  if (next.provisional()) *response.mutable_confirm_deadline() = next.confirm_deadline();
  if (absl::Status accepted = Accept(next, Persist::kRequired); !accepted.ok()) {
    // Applied but not recorded: an accepted config nobody can find after a
    // restart is worse than none. Put the node back (the journal stays until
    // the values are back) and say so.
    restore_.Add("apply that could not be persisted", prior);
    const bool restored = RestoreLocked("apply that could not be persisted");
    return absl::UnavailableError(absl::StrCat(accepted.message(), restored ? "; the node was put back as it was"
                                                                            : "; putting the node back failed, "
                                                                              "retried on every pass"));
  }
  state_dir_.RemoveJournal();
  startup_problem_.clear();  // a controller pushed a config since
  ReportStateHealthLocked();
  response.set_generation(accepted_.generation());
  ReconcileLocked("config applied", /*config_change=*/true);
  // Wake the loop so it re-arms its timer for the confirm deadline and the
  // new config's reconcile.interval (else the old interval's wait runs out
  // first: up to 30 s before a shorter interval takes effect).
  TriggerReconcile(next.provisional() ? "provisional config" : "config applied");
  return response;
}

absl::StatusOr<uint64_t> Agent::ConfirmConfig(uint64_t generation, const std::string& identity) {
  std::lock_guard<std::mutex> rlock(reconcile_mu_);
  if (!accepted_.provisional()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no provisional config to confirm (generation ", accepted_.generation(), " is permanent)"));
  }
  if (generation != 0 && generation != accepted_.generation()) {
    return absl::AbortedError(
        absl::StrCat("generation ", generation, " is not the pending one (", accepted_.generation(), ")"));
  }
  roced::v1::AcceptedConfig confirmed = Confirmed(accepted_);
  absl::Status saved = state_dir_.SaveAccepted(confirmed);
  RecordPersist(saved);
  if (!saved.ok()) {
    return absl::UnavailableError(absl::StrCat("cannot persist the confirmation, generation ", accepted_.generation(),
                                               " is still provisional: ", saved.message()));
  }
  accepted_ = confirmed;
  published_.ClearProvisional();
  LOG_INFO << "generation " << accepted_.generation() << " confirmed"
           << (identity.empty() ? "" : " by " + util::EscapeForLog(identity, 128));
  Publish(ConfigConfirmedEvent(accepted_, identity));
  return accepted_.generation();
}

bool Agent::NetdevExists(const std::string& netdev) const {
  if (options_.backends.netdev_exists) return options_.backends.netdev_exists(netdev);
  return util::PathExists(absl::StrCat(options_.paths.sysfs, "/class/net/", netdev));
}

roced::v1::ApplyResult Agent::Reconcile(const std::string& reason) {
  std::lock_guard<std::mutex> rlock(reconcile_mu_);
  return ReconcileLocked(reason, false);
}

roced::v1::ApplyResult Agent::ReconcileLocked(const std::string& reason, bool config_change) {
  RestoreLocked(reason);
  if (accepted_.generation() == 0 || accepted_.config().api_version().empty()) {
    roced::v1::ApplyResult nothing_managed;
    nothing_managed.set_success(true);
    PublishQosLocked();
    return nothing_managed;
  }
  const absl::Time mono = clock_->Monotonic();
  reconcile::PassResult pass = enforcer_.Enforce(accepted_.config(), published_.Devices(), clock_->Now());
  reporter_.Report(accepted_.generation(), reason, config_change, pass, clock_->Monotonic() - mono);
  PublishQosLocked();
  return pass.apply;
}

void Agent::PublishQosLocked() { published_.SetInterfaceQos(reconcile::ObserveQos(io_, published_.Devices())); }

void Agent::RecordPersist(const absl::Status& status) {
  persist_error_ = status.ok() ? "" : std::string(status.message());
  ReportStateHealthLocked();
}

void Agent::ReportStateHealthLocked() {
  std::vector<std::string> why;
  if (!persist_error_.empty()) {
    why.push_back(absl::StrCat("state directory not writable (", persist_error_,
                               "): configs pushed over gRPC are refused, the config file's are not persisted"));
  }
  if (!startup_problem_.empty()) why.push_back(startup_problem_);
  SetComponentHealth("state", why.empty(), absl::StrJoin(why, "; "));
}

absl::Duration Agent::ConfirmRemainingLocked() {
  const absl::Time deadline = FromProto(accepted_.confirm_deadline());
  const ConfirmClock::Remaining r = confirm_clock_.Check(deadline);
  if (r.moved_deadline) {
    // The wall clock was stepped: the window stays as long as it was.
    LOG_WARNING << "wall clock stepped by " << absl::FormatDuration(*r.moved_deadline - deadline) << "; generation "
                << accepted_.generation() << "'s confirm deadline moves with it (" << absl::FormatDuration(r.left)
                << " left)";
    *accepted_.mutable_confirm_deadline() = util::ToProto(*r.moved_deadline);
    published_.SetConfirmDeadline(accepted_.confirm_deadline());
    RecordPersist(state_dir_.SaveAccepted(accepted_));
  }
  return r.left;
}

diagnose::Inputs Agent::DiagnoseInputs() {
  roced::v1::NodeState state = State();
  std::lock_guard<std::mutex> rlock(reconcile_mu_);
  diagnose::Inputs in = diagnose::Gather(std::move(state), options_.backends.qos_view ? io_ : nullptr,
                                         hal::HugepagePools(options_.paths));
  diagnose::GatherHost(options_.paths, options_.backends.qos_view, &in);
  return in;
}

void Agent::TriggerReconcile(const std::string& reason) { reconcile_loop_.Trigger(reason); }

absl::Duration Agent::ReconcileWait() {
  std::lock_guard<std::mutex> lock(reconcile_mu_);
  absl::Duration wait = FromProto(accepted_.config().reconcile().interval());
  if (wait <= absl::ZeroDuration()) wait = model::defaults::kReconcileInterval;
  if (accepted_.provisional()) wait = std::min(wait, std::max(ConfirmRemainingLocked(), absl::ZeroDuration()));
  return wait;
}

void Agent::ReconcilePass(const std::string& reason) {
  std::lock_guard<std::mutex> rlock(reconcile_mu_);
  if (accepted_.provisional() && ConfirmRemainingLocked() <= absl::ZeroDuration()) {
    LOG_WARNING << "provisional generation " << accepted_.generation()
                << " was not confirmed in time; rolling back to the previous config";
    roced::v1::ConfigRollback why;
    why.set_reason(model::kReasonConfirmTimeout);
    why.set_detail(absl::StrCat("not confirmed by its deadline, ", TimeUtil::ToString(accepted_.confirm_deadline())));
    if (absl::Status s = RollBackProvisionalLocked(std::move(why)); !s.ok()) {
      LOG_ERROR << "confirm-timeout rollback: " << s.message();
      return;
    }
    ReconcileLocked("confirm timeout", /*config_change=*/true);
    return;
  }
  ReconcileLocked(reason, false);
}

void Agent::RefreshDevices(const std::string& reason) {
  // A device that came back (rdma link add sends no rtnetlink event) or
  // changed gets its fields enforced now, not at the next periodic pass.
  if (device_refresh_.Run(reason) && reason != "start-up") TriggerReconcile("RDMA devices changed");
}

void Agent::Start() {
  RefreshDevices("start-up");
  if (options_.use_netlink) {
    monitor_ = std::make_unique<hal::LinkMonitor>([this](const std::string& reason) {
      discovery_loop_.Trigger(reason);
      TriggerReconcile(reason);
      // The state listeners too (the counters refresh, hence the PFC
      // watchdog's priorities): a DCB change on a netdev no config manages
      // moves nothing in the state.
      published_.NotifyListeners();
    });
    if (absl::Status s = monitor_->Start(); !s.ok()) {
      LOG_WARNING << "netlink monitor unavailable (" << s << "); relying on periodic discovery every "
                  << absl::FormatDuration(options_.discovery_interval);
      monitor_.reset();
    }
  }
  discovery_loop_.Start();
  if (options_.reconcile) reconcile_loop_.Start();
}

bool Agent::AwaitIdle(absl::Duration timeout) {
  return discovery_loop_.AwaitIdle(timeout) && reconcile_loop_.AwaitIdle(timeout);
}

void Agent::Stop() {
  discovery_loop_.Stop();
  reconcile_loop_.Stop();
  if (monitor_) monitor_->Stop();
  discovery_.CloseAll();
  bus_.CloseAll();
}

}  // namespace roced::agent

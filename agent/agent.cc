#include "agent/agent.h"

#include "agent/config_lifecycle.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "google/protobuf/util/time_util.h"
#include "model/validate.h"
#include "reconcile/journal.h"
#include "reconcile/linux_node_io.h"
#include "reconcile/plan.h"
#include "hal/link_mtu.h"
#include "google/protobuf/util/json_util.h"
#include "roced/version.h"
#include "util/fs.h"
#include "util/status_macros.h"
#include "util/log.h"
#include "util/proto_time.h"

namespace roced::agent {

using google::protobuf::util::TimeUtil;

Agent::Agent(AgentOptions options)
    : options_(std::move(options)),
      state_dir_(options_.state_dir),
      discovery_(options_.paths),
      registry_(std::make_shared<prometheus::Registry>()),
      discovery_loop_({"roced-discover"}, [this] { return options_.discovery_interval; },
                      [this](const std::string& reason) { RefreshDevices(reason); }),
      reconcile_loop_({"roced-reconcile"}, [this] { return ReconcileWait(); },
                      [this](const std::string& reason) { ReconcilePass(reason); }) {
  if (options_.node_io == nullptr) {
    owned_io_ = std::make_unique<reconcile::LinuxNodeIo>(options_.paths);
    io_ = owned_io_.get();
  } else {
    io_ = options_.node_io;
  }
  reconcile_runs_ = &prometheus::BuildCounter()
                         .Name("roced_reconcile_runs_total")
                         .Help("Reconcile passes, by result: noop (in sync), success (applied), "
                               "failure (rolled back), drift_observed (observe mode).")
                         .Register(*registry_);
  drift_detected_ = &prometheus::BuildCounter()
                         .Name("roced_drift_detected_total")
                         .Help("Managed fields found changed behind the agent's back.")
                         .Register(*registry_)
                         .Add({});
  reconcile_duration_ = &prometheus::BuildHistogram()
                             .Name("roced_reconcile_duration_seconds")
                             .Help("Wall time of one reconcile pass (observe, plan, apply, verify).")
                             .Register(*registry_)
                             .Add({}, prometheus::Histogram::BucketBoundaries{
                                          0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                          1, 2.5, 5});
  for (const char* r : {"noop", "success", "failure", "drift_observed"}) reconcile_runs_->Add({{"result", r}});
  discovery_runs_ = &prometheus::BuildCounter()
                         .Name("roced_discovery_runs_total")
                         .Help("Device discovery passes, by result.")
                         .Register(*registry_);
  config_loads_ = &prometheus::BuildCounter()
                       .Name("roced_config_loads_total")
                       .Help("Config file loads (start-up and SIGHUP), by result.")
                       .Register(*registry_);
  discovery_duration_ = &prometheus::BuildHistogram()
                             .Name("roced_discovery_duration_seconds")
                             .Help("Wall time of one device discovery pass.")
                             .Register(*registry_)
                             .Add({}, prometheus::Histogram::BucketBoundaries{
                                          0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                          0.25, 0.5, 1});
  // Pre-create the label sets so a scrape before the first failure still
  // shows the failure series at 0.
  for (const char* r : {"success", "error"}) {
    discovery_runs_->Add({{"result", r}});
    config_loads_->Add({{"result", r}});
  }
  std::lock_guard<std::mutex> lock(mu_);
  state_.set_hostname(util::Hostname());
  state_.mutable_agent()->set_version(kVersion);
  state_.mutable_agent()->set_git_commit(kGitCommit);
  *state_.mutable_agent()->mutable_started_at() = TimeUtil::GetCurrentTime();
}

Agent::~Agent() { Stop(); }

void Agent::SetComponentHealth(const std::string& name, bool healthy,
                               const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  roced::v1::ComponentHealth* c = nullptr;
  for (auto& existing : *state_.mutable_agent()->mutable_components()) {
    if (existing.name() == name) c = &existing;
  }
  if (c == nullptr) {
    c = state_.mutable_agent()->add_components();
    c->set_name(name);
  }
  c->set_healthy(healthy);
  c->set_message(message);
  if (healthy) *c->mutable_last_success() = TimeUtil::GetCurrentTime();
}

namespace {

std::string Digest(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return absl::StrCat(absl::Hex(h, absl::kZeroPad16));
}

using util::FromProto;
using util::ToProto;

roced::v1::StateEvent DriftEventFor(const reconcile::Step& s, bool corrected) {
  roced::v1::StateEvent ev;
  auto* f = ev.mutable_drift()->mutable_field();
  f->set_object(s.object);
  f->set_field(reconcile::FieldPath(s.field));
  f->set_desired(reconcile::Render(s.wanted, s.field));
  f->set_observed(reconcile::Render(s.current, s.field));
  f->set_sync(roced::v1::FIELD_SYNC_DRIFTED);
  ev.mutable_drift()->set_corrected(corrected);
  return ev;
}

std::string JoinIssues(const std::vector<roced::v1::ValidationIssue>& issues) {
  std::vector<std::string> parts;
  for (const auto& i : issues) {
    if (i.severity() == roced::v1::SEVERITY_ERROR) parts.push_back(absl::StrCat(i.path(), ": ", i.message()));
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace

void Agent::RecordConfigError(const std::string& error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    state_.mutable_config()->set_last_error(error);
  }
  roced::v1::StateEvent ev;
  ev.mutable_config()->set_accepted(false);
  ev.mutable_config()->set_error(error);
  Publish(std::move(ev));
}

void Agent::LoadJournal(const std::optional<roced::v1::AcceptedConfig>& persisted) {
  std::optional<roced::v1::ApplyJournal> journal = state_dir_.LoadJournal();
  if (!journal) return;
  if (journal->for_generation() != 0 && persisted && persisted->generation() >= journal->for_generation()) {
    // The apply it guarded was accepted before the agent stopped.
    state_dir_.RemoveJournal();
    return;
  }
  LOG_WARNING << "the agent stopped in the middle of an apply (" << journal->reason() << ", started "
              << TimeUtil::ToString(journal->started_at()) << "); writing back the " << journal->prior_size()
              << " value(s) it had changed before resuming";
  pending_restore_ = reconcile::MergePrior(
      pending_restore_, std::vector<roced::v1::PriorValue>(journal->prior().begin(), journal->prior().end()));
}

bool Agent::RestorePendingLocked(const std::string& reason) {
  if (pending_restore_.empty()) return true;
  std::vector<reconcile::Target> targets;
  reconcile::Plan plan = reconcile::RestorePlan(pending_restore_, io_, &targets);
  if (plan.empty()) {
    pending_restore_.clear();
    state_dir_.RemoveJournal();
    return true;
  }
  roced::v1::ApplyResult result = reconcile::ApplyPlan(plan, targets, io_);
  for (const auto& sr : result.steps()) {
    LOG_INFO << "restore (" << reason << "): " << sr.step().object() << " " << sr.step().field() << " "
             << sr.step().current() << " -> " << sr.step().wanted() << ": "
             << roced::v1::StepOutcome_Name(sr.outcome()) << (sr.error().empty() ? "" : " ") << sr.error();
  }
  reconcile_runs_->Add({{"result", result.success() ? "restore" : "failure"}}).Increment();
  roced::v1::StateEvent ev;
  ev.mutable_reconcile()->set_generation(accepted_.generation());
  *ev.mutable_reconcile()->mutable_result() = result;
  Publish(std::move(ev));
  if (!result.success()) {
    LOG_ERROR << "restore (" << reason << ") failed; trying again on the next pass";
    return false;
  }
  pending_restore_.clear();
  state_dir_.RemoveJournal();
  return true;
}

std::vector<roced::v1::PriorValue> Agent::JournalRestoreLocked(
    const std::string& reason, const std::vector<roced::v1::PriorValue>& prior) {
  // Journal first, and everything still to be written back (a restore
  // already pending included): an agent that dies before the values are
  // back finds all of them at its next start.
  std::vector<roced::v1::PriorValue> merged = reconcile::MergePrior(prior, pending_restore_);
  if (absl::Status s = state_dir_.WriteJournal(0, reason, merged); !s.ok()) {
    LOG_WARNING << "cannot journal the " << reason << ": " << s.message();
  }
  return merged;
}

absl::Status Agent::RollBackProvisionalLocked() {
  std::vector<roced::v1::PriorValue> merged = JournalRestoreLocked(
      "confirm-timeout rollback",
      std::vector<roced::v1::PriorValue>(accepted_.prior().begin(), accepted_.prior().end()));
  RETURN_IF_ERROR(Accept(ReturnFromProvisional(accepted_)));
  pending_restore_ = std::move(merged);
  return absl::OkStatus();
}

absl::Status Agent::Accept(roced::v1::AcceptedConfig accepted) {
  model::ApplyDefaults(accepted.mutable_config());
  accepted.set_generation(accepted_.generation() + 1);
  *accepted.mutable_accepted_at() = TimeUtil::GetCurrentTime();
  if (absl::Status s = state_dir_.SaveAccepted(accepted); !s.ok()) {
    return absl::UnavailableError(absl::StrCat("cannot persist the accepted config: ", s.message()));
  }
  accepted_ = accepted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto* cs = state_.mutable_config();
    cs->set_generation(accepted.generation());
    cs->set_source(accepted.source());
    cs->set_path(accepted.path());
    *cs->mutable_accepted_at() = accepted.accepted_at();
    cs->set_mode(accepted.config().mode());
    *cs->mutable_desired() = accepted.config();
    cs->clear_last_error();
    if (accepted.provisional()) {
      *cs->mutable_confirm_deadline() = accepted.confirm_deadline();
    } else {
      cs->clear_confirm_deadline();
    }
  }
  roced::v1::StateEvent ev;
  ev.mutable_config()->set_accepted(true);
  ev.mutable_config()->set_generation(accepted.generation());
  ev.mutable_config()->set_source(accepted.source());
  Publish(std::move(ev));
  LOG_INFO << "accepted config generation " << accepted.generation() << " from "
           << roced::v1::ConfigSource_Name(accepted.source())
           << (accepted.provisional() ? " (provisional)" : "");
  return absl::OkStatus();
}

absl::StatusOr<std::optional<roced::v1::AcceptedConfig>> Agent::ReadConfigFile() {
  if (options_.config_optional && !util::PathExists(options_.config_path)) return std::nullopt;
  auto text = util::ReadFile(options_.config_path);
  std::vector<roced::v1::ValidationIssue> warnings;
  absl::StatusOr<roced::v1::NodeConfig> config =
      text.ok() ? model::LoadConfigFile(options_.config_path, &warnings) : text.status();
  for (const auto& w : warnings) {
    std::string line = model::FormatIssues(options_.config_path, {w});
    if (!line.empty() && line.back() == '\n') line.pop_back();
    LOG_WARNING << line;
  }
  if (!config.ok()) {
    config_loads_->Add({{"result", "error"}}).Increment();
    RecordConfigError(std::string(config.status().message()));
    SetComponentHealth("config", false, "last load rejected; previous config in force");
    return config.status();
  }
  config_loads_->Add({{"result", "success"}}).Increment();
  roced::v1::AcceptedConfig file;
  file.set_source(roced::v1::CONFIG_SOURCE_FILE);
  file.set_path(options_.config_path);
  file.set_file_digest(Digest(*text));
  *file.mutable_config() = *config;
  model::ApplyDefaults(file.mutable_config());
  return file;
}

absl::Status Agent::LoadConfig(bool startup) {
  if (options_.config_path.empty()) return absl::OkStatus();
  std::lock_guard<std::mutex> rlock(reconcile_mu_);
  const bool first = startup && accepted_.generation() == 0;
  std::optional<roced::v1::AcceptedConfig> persisted;
  if (first) {
    persisted = state_dir_.LoadAccepted();
    // Kept even when the file is rejected: generations never go backwards.
    if (persisted) accepted_.set_generation(persisted->generation());
    LoadJournal(persisted);
    if (!pending_restore_.empty()) TriggerReconcile("start-up restore");
  }
  absl::StatusOr<std::optional<roced::v1::AcceptedConfig>> file = ReadConfigFile();
  if (!file.ok()) return file.status();
  std::optional<roced::v1::AcceptedConfig> next = *file;
  if (first) {
    std::optional<StartupChoice> choice = ResolveStartupConfig(persisted, *file, absl::Now());
    if (choice) {
      LOG_INFO << "start-up: " << choice->why;
      if (!choice->restore.empty()) {
        pending_restore_ = JournalRestoreLocked("start-up rollback", choice->restore);
      }
      accepted_.set_generation(choice->base_generation);
      next = choice->accept;
    }
  }
  if (!next) {
    LOG_WARNING << "config " << options_.config_path
                << " does not exist; running without desired state (nothing managed)";
    SetComponentHealth("config", true, "no config file; nothing is managed");
    return absl::OkStatus();
  }
  bool same = accepted_.config().api_version() == "roced/v1" &&
              google::protobuf::util::MessageDifferencer::Equals(accepted_.config(), next->config()) &&
              accepted_.source() == next->source();
  if (!same) {
    if (absl::Status s = Accept(*next); !s.ok()) {
      RecordConfigError(std::string(s.message()));
      return s;
    }
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    state_.mutable_config()->clear_last_error();
  }
  SetComponentHealth("config", true, "");
  TriggerReconcile(startup ? "start-up" : "config reload");
  return absl::OkStatus();
}

absl::StatusOr<roced::v1::ApplyConfigResponse> Agent::ApplyConfig(
    const roced::v1::ApplyConfigRequest& request) {
  std::vector<roced::v1::ValidationIssue> issues;
  model::ValidateConfig(request.config(), nullptr, &issues);
  if (model::HasErrors(issues)) {
    return absl::InvalidArgumentError(absl::StrCat("config rejected: ", JoinIssues(issues)));
  }
  absl::Duration confirm = FromProto(request.confirm_timeout());
  if (confirm < absl::ZeroDuration() || confirm > absl::Hours(24)) {
    return absl::InvalidArgumentError("confirm_timeout: allowed 0 (none) to 24h");
  }
  std::lock_guard<std::mutex> rlock(reconcile_mu_);
  if (request.has_expected_generation() && request.expected_generation() != accepted_.generation()) {
    return absl::AbortedError(absl::StrCat("stale writer: expected generation ", request.expected_generation(),
                                           " but the accepted generation is ", accepted_.generation()));
  }
  if (!request.dry_run() && !pending_restore_.empty() && !RestorePendingLocked("before ApplyConfig")) {
    // The new config is the newest deliberate change: it supersedes a
    // restore that keeps failing (the failure stays in the log and events).
    LOG_WARNING << "dropping " << pending_restore_.size()
                << " value(s) still to restore: superseded by ApplyConfig";
    pending_restore_.clear();
    state_dir_.RemoveJournal();
  }
  roced::v1::NodeConfig config = request.config();
  model::ApplyDefaults(&config);
  std::vector<roced::v1::RdmaDevice> devices;
  {
    std::lock_guard<std::mutex> lock(mu_);
    devices.assign(state_.devices().begin(), state_.devices().end());
  }
  auto targets = reconcile::ResolveTargets(config, devices, [this](const std::string& nd) { return NetdevExists(nd); });
  if (!targets.ok()) return targets.status();
  reconcile::Plan plan = reconcile::ComputePlan(config, *targets, reconcile::ObserveAll(io_, config, *targets));

  roced::v1::ApplyConfigResponse response;
  for (const auto& w : issues) *response.add_warnings() = w;
  for (const auto& step : plan.steps) *response.mutable_plan()->add_steps() = reconcile::ToProto(step);
  if (request.dry_run()) {
    response.set_generation(accepted_.generation());
    return response;
  }
  // Re-sending the config in force changes nothing, not even the
  // generation (a controller that re-pushes on every sync loop would
  // otherwise make generations meaningless).
  if (plan.empty() && confirm == absl::ZeroDuration() && !accepted_.provisional() &&
      accepted_.source() == roced::v1::CONFIG_SOURCE_GRPC &&
      google::protobuf::util::MessageDifferencer::Equals(accepted_.config(), config)) {
    response.mutable_result()->set_success(true);
    response.set_generation(accepted_.generation());
    return response;
  }
  std::vector<roced::v1::PriorValue> prior;
  if (config.mode() == roced::v1::MODE_ENFORCE && !plan.empty()) {
    prior = reconcile::PriorValues(plan, *targets);
    // Before the node is touched: an agent killed during the apply writes
    // these back at start-up.
    if (absl::Status s = state_dir_.WriteJournal(accepted_.generation() + 1, "ApplyConfig", prior); !s.ok()) {
      return absl::UnavailableError(absl::StrCat("cannot journal the apply, nothing changed: ", s.message()));
    }
    *response.mutable_result() = reconcile::ApplyPlan(plan, *targets, io_);
    if (!response.result().success()) {
      state_dir_.RemoveJournal();
      reconcile_runs_->Add({{"result", "failure"}}).Increment();
      response.set_generation(accepted_.generation());
      return response;
    }
  } else {
    response.mutable_result()->set_success(true);
  }
  roced::v1::AcceptedConfig next;
  next.set_source(roced::v1::CONFIG_SOURCE_GRPC);
  next.set_path(options_.config_path);
  next.set_file_digest(accepted_.file_digest());
  *next.mutable_config() = config;
  if (confirm > absl::ZeroDuration()) {
    next.set_provisional(true);
    *next.mutable_previous() = accepted_.provisional() ? accepted_.previous() : accepted_.config();
    *next.mutable_confirm_deadline() = ToProto(absl::Now() + confirm);
    *response.mutable_confirm_deadline() = next.confirm_deadline();
    // The oldest value of each field is the one a rollback returns to.
    std::vector<roced::v1::PriorValue> older;
    if (accepted_.provisional()) older.assign(accepted_.prior().begin(), accepted_.prior().end());
    for (const auto& p : reconcile::MergePrior(older, prior)) *next.add_prior() = p;
  }
  absl::Status accepted = Accept(next);
  state_dir_.RemoveJournal();
  if (!accepted.ok()) return accepted;
  response.set_generation(accepted_.generation());
  ReconcileLocked("config applied", /*config_change=*/true);
  // Wake the loop so it re-arms its timer for the confirm deadline and the
  // new config's reconcile.interval (else the old interval's wait runs out
  // first: up to 30 s before a shorter interval takes effect).
  TriggerReconcile(next.provisional() ? "provisional config" : "config applied");
  return response;
}

absl::StatusOr<uint64_t> Agent::ConfirmConfig(uint64_t generation) {
  std::lock_guard<std::mutex> rlock(reconcile_mu_);
  if (!accepted_.provisional()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no provisional config to confirm (generation ", accepted_.generation(), " is permanent)"));
  }
  if (generation != 0 && generation != accepted_.generation()) {
    return absl::AbortedError(absl::StrCat("generation ", generation, " is not the pending one (",
                                           accepted_.generation(), ")"));
  }
  roced::v1::AcceptedConfig confirmed = accepted_;
  confirmed.set_provisional(false);
  confirmed.clear_previous();
  confirmed.clear_prior();
  confirmed.clear_confirm_deadline();
  if (absl::Status s = state_dir_.SaveAccepted(confirmed); !s.ok()) return s;
  accepted_ = confirmed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    state_.mutable_config()->clear_confirm_deadline();
  }
  LOG_INFO << "generation " << accepted_.generation() << " confirmed";
  return accepted_.generation();
}

bool Agent::NetdevExists(const std::string& netdev) const {
  if (options_.paths.IsLiveSysfs()) return hal::LinkMtu().Exists(netdev);
  return util::PathExists(absl::StrCat(options_.paths.sysfs, "/class/net/", netdev));
}

roced::v1::ApplyResult Agent::Reconcile(const std::string& reason) {
  std::lock_guard<std::mutex> rlock(reconcile_mu_);
  return ReconcileLocked(reason, false);
}

roced::v1::ApplyResult Agent::ReconcileLocked(const std::string& reason, bool config_change) {
  roced::v1::ApplyResult result;
  RestorePendingLocked(reason);
  if (accepted_.generation() == 0 || accepted_.config().api_version().empty()) {
    result.set_success(true);
    return result;
  }
  absl::Time start = absl::Now();
  const roced::v1::NodeConfig& config = accepted_.config();
  std::vector<roced::v1::RdmaDevice> devices;
  {
    std::lock_guard<std::mutex> lock(mu_);
    devices.assign(state_.devices().begin(), state_.devices().end());
  }
  auto targets = reconcile::ResolveTargets(config, devices, [this](const std::string& nd) { return NetdevExists(nd); });
  auto finish = [&](const char* outcome, bool converged, const std::vector<roced::v1::FieldStatus>& fields) {
    reconcile_runs_->Add({{"result", outcome}}).Increment();
    reconcile_duration_->Observe(absl::ToDoubleSeconds(absl::Now() - start));
    std::lock_guard<std::mutex> lock(mu_);
    state_.mutable_config()->set_converged(converged);
    state_.clear_fields();
    for (const auto& f : fields) *state_.add_fields() = f;
  };
  if (!targets.ok()) {
    LOG_WARNING << "reconcile (" << reason << "): " << targets.status().message();
    roced::v1::FieldStatus fs;
    fs.set_field("interfaces");
    fs.set_sync(roced::v1::FIELD_SYNC_FAILED);
    fs.set_message(std::string(targets.status().message()));
    finish("failure", false, {fs});
    result.set_success(false);
    return result;
  }
  reconcile::Plan plan = reconcile::ComputePlan(config, *targets, reconcile::ObserveAll(io_, config, *targets));
  // Hugepage pools that were only partly satisfied wait before the next try.
  const absl::Time now = absl::Now();
  std::erase_if(plan.steps, [&](const reconcile::Step& s) {
    if (s.field != reconcile::Field::kHugepages) return false;
    auto it = hugepage_backoff_.find(s.pool);
    bool waiting = it != hugepage_backoff_.end() && it->second.first == std::get<uint64_t>(s.wanted) &&
                   now < it->second.second;
    if (waiting) {
      // Still short: keep saying so (not converged, wanted vs reserved).
      for (auto& f : plan.fields) {
        if (f.object() != s.object || f.field() != reconcile::FieldPath(s.field)) continue;
        f.set_sync(roced::v1::FIELD_SYNC_FAILED);
        f.set_message(absl::StrCat("wanted ", reconcile::Render(s.wanted, s.field),
                                   " pages, the kernel reserved ", reconcile::Render(s.current, s.field),
                                   "; next attempt in ", absl::FormatDuration(it->second.second - now)));
      }
    }
    return waiting;
  });
  bool unsupported = false;
  bool all_in_sync = true;
  for (const auto& f : plan.fields) {
    unsupported |= f.sync() == roced::v1::FIELD_SYNC_UNSUPPORTED;
    all_in_sync &= f.sync() == roced::v1::FIELD_SYNC_IN_SYNC;
  }
  if (plan.empty()) {
    // A pool waiting out its back-off is no step but is not converged either.
    finish("noop", all_in_sync, plan.fields);
    result.set_success(true);
    return result;
  }
  const bool observe = config.mode() == roced::v1::MODE_OBSERVE;
  if (!config_change) {
    drift_detected_->Increment(static_cast<double>(plan.steps.size()));
    LOG_WARNING << "drift (" << reason << "): " << plan.steps.size() << " field(s) differ"
                << (observe ? "; observe mode, leaving them" : "; correcting");
  }
  if (observe) {
    for (const auto& s : plan.steps) Publish(DriftEventFor(s, /*corrected=*/false));
    finish("drift_observed", false, plan.fields);
    result.set_success(true);
    return result;
  }
  result = reconcile::ApplyPlan(plan, *targets, io_);
  for (int i = 0; i < result.steps_size(); ++i) {
    const auto& sr = result.steps(i);
    const reconcile::Step& s = plan.steps[static_cast<size_t>(i)];
    if (s.field == reconcile::Field::kHugepages && sr.outcome() == roced::v1::STEP_OUTCOME_PARTIAL) {
      hugepage_backoff_[s.pool] = {std::get<uint64_t>(s.wanted), now + options_.hugepage_retry};
      LOG_WARNING << s.object << ": " << sr.error() << "; next attempt in "
                  << absl::FormatDuration(options_.hugepage_retry);
    }
    if (!config_change) Publish(DriftEventFor(s, sr.outcome() == roced::v1::STEP_OUTCOME_APPLIED));
  }
  reconcile::Plan after = reconcile::ComputePlan(config, *targets, reconcile::ObserveAll(io_, config, *targets));
  for (auto& f : after.fields) {
    for (const auto& sr : result.steps()) {
      if (sr.step().object() == f.object() && sr.step().field() == f.field() && !sr.error().empty()) {
        f.set_sync(roced::v1::FIELD_SYNC_FAILED);
        f.set_message(sr.error());
      }
    }
  }
  finish(result.success() ? "success" : "failure", after.empty() && !unsupported, after.fields);
  roced::v1::StateEvent ev;
  ev.mutable_reconcile()->set_generation(accepted_.generation());
  *ev.mutable_reconcile()->mutable_result() = result;
  Publish(std::move(ev));
  LOG_INFO << "reconcile (" << reason << "): " << (result.success() ? "applied " : "FAILED, rolled back ")
           << plan.steps.size() << " step(s) in " << absl::FormatDuration(absl::Now() - start);
  return result;
}

diagnose::Inputs Agent::DiagnoseInputs() {
  diagnose::Inputs in;
  in.state = State();
  // Netdev names of a fixture tree mean nothing to the running kernel.
  if (options_.node_io != nullptr || options_.paths.IsLiveSysfs()) {
    std::lock_guard<std::mutex> rlock(reconcile_mu_);
    for (const auto& dev : in.state.devices()) {
      for (const auto& port : dev.ports()) {
        if (port.link_layer() != "Ethernet" || port.netdev().empty() || in.netdevs.count(port.netdev())) continue;
        reconcile::Target t;
        t.netdev = port.netdev();
        t.rdma_device = dev.name();
        t.port = port.number();
        in.netdevs[port.netdev()] = io_->ObserveInterface(t);
      }
    }
  }
  const std::string hp_root = options_.paths.sysfs + "/kernel/mm/hugepages";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(hp_root, ec)) {
    const std::string name = entry.path().filename().string();  // hugepages-2048kB
    uint64_t kb = 0;
    if (!absl::StartsWith(name, "hugepages-") || !absl::EndsWith(name, "kB") ||
        !absl::SimpleAtoi(name.substr(10, name.size() - 12), &kb)) {
      continue;
    }
    auto n = util::ReadFileTrimmed(entry.path().string() + "/nr_hugepages");
    uint64_t pages = 0;
    if (n.ok() && absl::SimpleAtoi(*n, &pages)) in.hugepages[kb] = pages;
  }
  rlimit lim{};
  if (getrlimit(RLIMIT_MEMLOCK, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) in.memlock_bytes = lim.rlim_cur;
  return in;
}

void Agent::TriggerReconcile(const std::string& reason) { reconcile_loop_.Trigger(reason); }

absl::Duration Agent::ReconcileWait() {
  std::lock_guard<std::mutex> lock(reconcile_mu_);
  absl::Duration wait = FromProto(accepted_.config().reconcile().interval());
  if (wait <= absl::ZeroDuration()) wait = absl::Seconds(30);
  if (accepted_.provisional()) {
    wait = std::min(wait, std::max(FromProto(accepted_.confirm_deadline()) - absl::Now(),
                                   absl::ZeroDuration()));
  }
  return wait;
}

void Agent::ReconcilePass(const std::string& reason) {
  std::lock_guard<std::mutex> rlock(reconcile_mu_);
  if (accepted_.provisional() && FromProto(accepted_.confirm_deadline()) <= absl::Now()) {
    LOG_WARNING << "provisional generation " << accepted_.generation()
                << " was not confirmed in time; rolling back to the previous config";
    if (absl::Status s = RollBackProvisionalLocked(); !s.ok()) {
      LOG_ERROR << "confirm-timeout rollback: " << s.message();
      return;
    }
    ReconcileLocked("confirm timeout", /*config_change=*/true);
    return;
  }
  ReconcileLocked(reason, false);
}

void Agent::RefreshDevices(const std::string& reason) {
  absl::Time start = absl::Now();
  if (options_.use_verbs && options_.paths.IsLiveSysfs()) verbs_.Refresh();
  auto devices = discovery_.Discover();
  discovery_duration_->Observe(absl::ToDoubleSeconds(absl::Now() - start));
  if (!devices.ok()) {
    discovery_runs_->Add({{"result", "error"}}).Increment();
    LOG_ERROR << "discovery (" << reason << ") failed: " << devices.status();
    SetComponentHealth("discovery", false, std::string(devices.status().message()));
    return;
  }
  discovery_runs_->Add({{"result", "success"}}).Increment();
  if (options_.use_verbs && options_.paths.IsLiveSysfs()) verbs_.Enrich(&*devices);

  std::vector<roced::v1::StateEvent> events;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::map<std::string, const roced::v1::RdmaDevice*> before;
    for (const auto& d : state_.devices()) before[d.name()] = &d;
    std::set<std::string> after;
    for (const auto& d : *devices) {
      after.insert(d.name());
      auto it = before.find(d.name());
      roced::v1::DeviceEvent ev;
      ev.set_device(d.name());
      if (it == before.end()) {
        ev.set_kind(roced::v1::DeviceEvent::KIND_ADDED);
        ev.set_detail(absl::StrCat(d.ports_size(), " port(s), driver ", d.driver()));
      } else if (!google::protobuf::util::MessageDifferencer::Equals(*it->second, d)) {
        ev.set_kind(roced::v1::DeviceEvent::KIND_CHANGED);
        ev.set_detail(reason);
      } else {
        continue;
      }
      roced::v1::StateEvent se;
      *se.mutable_device() = ev;
      events.push_back(std::move(se));
    }
    for (const auto& [name, dev] : before) {
      if (after.count(name)) continue;
      roced::v1::StateEvent se;
      se.mutable_device()->set_kind(roced::v1::DeviceEvent::KIND_REMOVED);
      se.mutable_device()->set_device(name);
      events.push_back(std::move(se));
    }
    state_.clear_devices();
    for (auto& d : *devices) *state_.add_devices() = std::move(d);
    *state_.mutable_observed_at() = TimeUtil::GetCurrentTime();
  }
  SetComponentHealth("discovery", true, "");
  for (auto& ev : events) {
    LOG_INFO << "device " << ev.device().device() << ": "
             << roced::v1::DeviceEvent::Kind_Name(ev.device().kind()) << " ("
             << ev.device().detail() << ")";
    Publish(std::move(ev));
  }
}

void Agent::Start() {
  RefreshDevices("start-up");
  if (options_.use_netlink) {
    monitor_ = std::make_unique<hal::LinkMonitor>([this](const std::string& reason) {
      discovery_loop_.Trigger(reason);
      TriggerReconcile(reason);
    });
    if (absl::Status s = monitor_->Start(); !s.ok()) {
      LOG_WARNING << "netlink monitor unavailable (" << s
                  << "); relying on periodic discovery every "
                  << absl::FormatDuration(options_.discovery_interval);
      monitor_.reset();
    }
  }
  discovery_loop_.Start();
  if (options_.reconcile) reconcile_loop_.Start();
}

void Agent::Stop() {
  discovery_loop_.Stop();
  reconcile_loop_.Stop();
  if (monitor_) monitor_->Stop();
  verbs_.CloseAll();
  bus_.CloseAll();
}

roced::v1::NodeState Agent::State() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_;
}

}  // namespace roced::agent

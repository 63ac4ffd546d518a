#include "reconcile/enforce.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "reconcile/plan.h"
#include "util/log.h"

namespace roced::reconcile {

BackoffPolicy::Key BackoffPolicy::KeyOf(const Step& step) {
  return {step.object, step.field, Render(step.wanted, step.field)};
}

void BackoffPolicy::Record(const Step& step, const roced::v1::StepResult& result, absl::Time now) {
  std::erase_if(held_, [now](const auto& entry) { return entry.second.until <= now; });
  const auto code = static_cast<absl::StatusCode>(result.code());
  // A step rolled back was undone with the rest of its apply: what it asked
  // for may be there next time.
  if (code == absl::StatusCode::kOk || result.outcome() == roced::v1::STEP_OUTCOME_ROLLED_BACK) {
    held_.erase(KeyOf(step));
    return;
  }
  if (Retryable(code)) return;
  held_[KeyOf(step)] = Entry{now + hold_, result.error()};
}

std::optional<absl::Time> BackoffPolicy::HeldUntil(const Step& step, absl::Time now,
                                                   std::string* why) const {
  auto it = held_.find(KeyOf(step));
  if (it == held_.end() || now >= it->second.until) return std::nullopt;
  if (why != nullptr) *why = it->second.error;
  return it->second.until;
}

const char* OutcomeName(PassResult::Outcome outcome) {
  switch (outcome) {
    case PassResult::Outcome::kNoop: return "noop";
    case PassResult::Outcome::kApplied: return "success";
    case PassResult::Outcome::kFailed: return "failure";
    case PassResult::Outcome::kDriftObserved: return "drift_observed";
  }
  return "unknown";
}

roced::v1::StateEvent DriftEvent(const Step& s, bool corrected) {
  roced::v1::StateEvent ev;
  auto* f = ev.mutable_drift()->mutable_field();
  f->set_object(s.object);
  f->set_field(FieldPath(s.field));
  f->set_desired(Render(s.wanted, s.field));
  f->set_observed(Render(s.current, s.field));
  f->set_sync(roced::v1::FIELD_SYNC_DRIFTED);
  ev.mutable_drift()->set_corrected(corrected);
  return ev;
}

Enforcer::Enforcer(NodeIo* io, NetdevExists netdev_exists, Options options)
    : io_(io), netdev_exists_(std::move(netdev_exists)), options_(options), backoff_(options.backoff) {}

absl::StatusOr<Prepared> Enforcer::Prepare(const roced::v1::NodeConfig& config,
                                           const std::vector<roced::v1::RdmaDevice>& devices) {
  absl::StatusOr<std::vector<Target>> targets = ResolveTargets(config, devices, netdev_exists_);
  if (!targets.ok()) return targets.status();
  Prepared prepared;
  prepared.targets = *std::move(targets);
  prepared.plan = ComputePlan(config, prepared.targets, ObserveAll(io_, config, prepared.targets));
  return prepared;
}

roced::v1::ApplyResult Enforcer::Apply(const Prepared& prepared) {
  return ApplyPlan(prepared.plan, prepared.targets, io_, options_.apply);
}

void Enforcer::HoldBack(Plan* plan, absl::Time now) const {
  std::erase_if(plan->steps, [&](const Step& s) {
    std::string why;
    std::optional<absl::Time> until = backoff_.HeldUntil(s, now, &why);
    if (!until) return false;
    // Still short: keep saying so (not converged, and why).
    for (auto& f : plan->fields) {
      if (f.object() != s.object || f.field() != FieldPath(s.field)) continue;
      f.set_sync(roced::v1::FIELD_SYNC_FAILED);
      f.set_message(absl::StrCat(why, "; next attempt in ", absl::FormatDuration(*until - now)));
    }
    return true;
  });
}

std::vector<roced::v1::FieldStatus> Enforcer::FieldsAfter(const roced::v1::NodeConfig& config,
                                                          const Prepared& prepared,
                                                          const roced::v1::ApplyResult& result,
                                                          bool* in_sync) {
  Plan after = ComputePlan(config, prepared.targets, ObserveAll(io_, config, prepared.targets));
  for (auto& f : after.fields) {
    for (const auto& sr : result.steps()) {
      if (sr.step().object() == f.object() && sr.step().field() == f.field() && !sr.error().empty()) {
        f.set_sync(roced::v1::FIELD_SYNC_FAILED);
        f.set_message(sr.error());
      }
    }
  }
  *in_sync = after.empty();
  return after.fields;
}

PassResult Enforcer::Enforce(const roced::v1::NodeConfig& config,
                             const std::vector<roced::v1::RdmaDevice>& devices, absl::Time now) {
  PassResult pass;
  pass.apply.set_success(true);  // until a write or the targets fail
  absl::StatusOr<Prepared> prepared = Prepare(config, devices);
  if (!prepared.ok()) {
    pass.outcome = PassResult::Outcome::kFailed;
    pass.apply.set_success(false);
    pass.targets = prepared.status();
    roced::v1::FieldStatus fs;
    fs.set_field("interfaces");
    fs.set_sync(roced::v1::FIELD_SYNC_FAILED);
    fs.set_message(std::string(prepared.status().message()));
    pass.fields = {fs};
    return pass;
  }
  HoldBack(&prepared->plan, now);
  pass.steps = prepared->plan.steps;
  bool unsupported = false;
  bool all_in_sync = true;
  for (const auto& f : prepared->plan.fields) {
    unsupported |= f.sync() == roced::v1::FIELD_SYNC_UNSUPPORTED;
    all_in_sync &= f.sync() == roced::v1::FIELD_SYNC_IN_SYNC || f.sync() == roced::v1::FIELD_SYNC_NOT_MANAGEABLE;
  }
  if (prepared->plan.empty()) {
    // A step waiting out its back-off is no step but is not converged either.
    pass.fields = prepared->plan.fields;
    pass.converged = all_in_sync;
    return pass;
  }
  if (config.mode() == roced::v1::MODE_OBSERVE) {
    pass.outcome = PassResult::Outcome::kDriftObserved;
    pass.fields = prepared->plan.fields;
    return pass;
  }
  pass.apply = Apply(*prepared);
  for (int i = 0; i < pass.apply.steps_size(); ++i) {
    const roced::v1::StepResult& sr = pass.apply.steps(i);
    const Step& s = pass.steps[static_cast<size_t>(i)];
    backoff_.Record(s, sr, now);
    if (backoff_.HeldUntil(s, now, nullptr)) {
      LOG_WARNING << s.object << ": " << sr.error() << "; next attempt in "
                  << absl::FormatDuration(backoff_.hold());
    }
  }
  bool in_sync = false;
  pass.fields = FieldsAfter(config, *prepared, pass.apply, &in_sync);
  pass.outcome = pass.apply.success() ? PassResult::Outcome::kApplied : PassResult::Outcome::kFailed;
  pass.converged = in_sync && !unsupported;
  return pass;
}

}  // namespace roced::reconcile

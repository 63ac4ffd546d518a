#include "reconcile/apply.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "reconcile/fields.h"
#include "reconcile/plan.h"
#include "util/log.h"
#include "util/proto_time.h"

namespace roced::reconcile {

Observed ObserveAll(NodeIo* io, const roced::v1::NodeConfig& config,
                    const std::vector<Target>& targets) {
  Observed obs;
  for (const Target& t : targets) obs.interfaces.push_back(io->ObserveInterface(t));
  for (const HugepagePool& pool : HugepagePools(config)) obs.hugepages[pool] = io->ObserveHugepages(pool);
  return obs;
}

Value ObservedValue(const Step& step, const InterfaceObserved* i,
                    const std::optional<uint64_t>& hugepages) {
  return Spec(step.field).observe(i, hugepages);
}

namespace {

Value ReadBack(NodeIo* io, const Step& step, const std::vector<Target>& targets) {
  if (Spec(step.field).scope == Scope::kHugepagePool) {
    return ObservedValue(step, nullptr, io->ObserveHugepages(step.pool));
  }
  InterfaceObserved obs = io->ObserveInterface(targets[step.target]);
  return ObservedValue(step, &obs, std::nullopt);
}

// Writes `to` and reads back until it shows. Returns the last value read.
absl::Status WriteAndVerify(NodeIo* io, const Step& step, const std::vector<Target>& targets,
                            const Value& from, const Value& to, const ApplyOptions& opts,
                            Value* last_read) {
  const FieldSpec& spec = Spec(step.field);
  const Target* target = spec.scope == Scope::kHugepagePool ? nullptr : &targets[step.target];
  if (absl::Status s = spec.write(*io, target, step.pool, from, to); !s.ok()) return s;
  for (int attempt = 0; attempt < opts.verify_attempts; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(absl::ToChronoNanoseconds(opts.verify_interval));
    *last_read = ReadBack(io, step, targets);
    if (Satisfies(spec, *last_read, to)) return absl::OkStatus();
  }
  return absl::DataLossError(absl::StrCat("read back ", Render(*last_read, step.field), ", wanted ",
                                          Render(to, step.field), " (the driver did not apply it)"));
}

// A step its field's check (FieldSpec::check) refuses, and why.
struct Refusal {
  size_t step;
  absl::Status why;
};

// Every step's check, before anything is written: the first refusal.
std::optional<Refusal> CheckBeforeWriting(const Plan& plan, const std::vector<Target>& targets, NodeIo* io) {
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& step = plan.steps[i];
    const FieldSpec& spec = Spec(step.field);
    if (!spec.check || spec.scope == Scope::kHugepagePool) continue;
    absl::Status s = spec.check(plan, step, io->ObserveInterface(targets[step.target]));
    if (!s.ok()) return Refusal{i, std::move(s)};
  }
  return std::nullopt;
}

// The result of a plan refused before its first write: the refused step
// FAILED with the check's error, every other step SKIPPED, nothing rolled
// back because nothing was written.
roced::v1::ApplyResult RefusedResult(const Plan& plan, const Refusal& refusal) {
  roced::v1::ApplyResult result;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    roced::v1::StepResult* r = result.add_steps();
    *r->mutable_step() = ToProto(plan.steps[i]);
    r->set_outcome(i == refusal.step ? roced::v1::STEP_OUTCOME_FAILED : roced::v1::STEP_OUTCOME_SKIPPED);
  }
  roced::v1::StepResult* r = result.mutable_steps(static_cast<int>(refusal.step));
  r->set_error(absl::StrCat(refusal.why.message(), "; nothing was written"));
  r->set_code(static_cast<int32_t>(refusal.why.code()));
  result.set_success(false);
  return result;
}

}  // namespace

roced::v1::ApplyResult ApplyPlan(const Plan& plan, const std::vector<Target>& targets, NodeIo* io,
                                 const ApplyOptions& opts) {
  absl::Time start = absl::Now();
  if (std::optional<Refusal> refused = CheckBeforeWriting(plan, targets, io)) {
    const Step& step = plan.steps[refused->step];
    LOG_WARNING << "apply: " << step.object << " " << FieldPath(step.field) << ": " << refused->why.message()
                << "; nothing written";
    roced::v1::ApplyResult result = RefusedResult(plan, *refused);
    *result.mutable_duration() = util::ToProto(absl::Now() - start);
    return result;
  }
  roced::v1::ApplyResult result;
  // Indices of steps whose write went through (fully or in part): what a
  // rollback must undo.
  std::vector<size_t> touched;
  bool failed = false;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& step = plan.steps[i];
    roced::v1::StepResult* r = result.add_steps();
    *r->mutable_step() = ToProto(step);
    if (failed) {
      r->set_outcome(roced::v1::STEP_OUTCOME_SKIPPED);
      continue;
    }
    Value read;
    absl::Status s = WriteAndVerify(io, step, targets, step.current, step.wanted, opts, &read);
    if (s.ok()) {
      r->set_outcome(roced::v1::STEP_OUTCOME_APPLIED);
      touched.push_back(i);
      continue;
    }
    if (Spec(step.field).partial && absl::IsDataLoss(s)) {
      // The kernel reserved what it could; keep it and say how much.
      r->set_outcome(roced::v1::STEP_OUTCOME_PARTIAL);
      r->set_code(static_cast<int32_t>(absl::StatusCode::kResourceExhausted));
      r->set_error(absl::StrCat("wanted ", Render(step.wanted, step.field), " pages, the kernel reserved ",
                                Render(read, step.field)));
      // Pages were reserved: a later failure must give them back too.
      touched.push_back(i);
      continue;
    }
    r->set_outcome(absl::IsDataLoss(s) ? roced::v1::STEP_OUTCOME_NOT_VERIFIED
                                       : roced::v1::STEP_OUTCOME_FAILED);
    r->set_error(std::string(s.message()));
    r->set_code(static_cast<int32_t>(s.code()));
    LOG_WARNING << "apply: " << step.object << " " << FieldPath(step.field) << ": " << s.message()
                << "; rolling back";
    touched.push_back(i);  // a failed write may have half-applied (app table, sysfs bits)
    failed = true;
  }
  if (failed) {
    result.set_rolled_back(true);
    for (auto it = touched.rbegin(); it != touched.rend(); ++it) {
      const Step& step = plan.steps[*it];
      roced::v1::StepResult* r = result.mutable_steps(static_cast<int>(*it));
      Value now = ReadBack(io, step, targets);
      Value read;
      absl::Status s = Satisfies(Spec(step.field), now, step.current)
                           ? absl::OkStatus()
                           : WriteAndVerify(io, step, targets, now, step.current, opts, &read);
      if (r->outcome() == roced::v1::STEP_OUTCOME_APPLIED ||
          r->outcome() == roced::v1::STEP_OUTCOME_PARTIAL) {
        r->set_outcome(s.ok() ? roced::v1::STEP_OUTCOME_ROLLED_BACK : roced::v1::STEP_OUTCOME_FAILED);
      }
      if (!s.ok()) {
        r->set_error(absl::StrCat(r->error().empty() ? "" : r->error() + "; ",
                                  "rollback failed: ", s.message()));
        LOG_ERROR << "rollback of " << step.object << " " << FieldPath(step.field)
                  << " failed: " << s.message();
      }
    }
  }
  result.set_success(!failed);
  *result.mutable_duration() = util::ToProto(absl::Now() - start);
  return result;
}

}  // namespace roced::reconcile

#include "agent/core/pass_report.h"

#include "agent/core/state_events.h"
#include "util/log.h"

namespace roced::agent {

void PassReporter::Report(uint64_t generation, const std::string& reason, bool config_change,
                          const reconcile::PassResult& pass, absl::Duration took) const {
  using Outcome = reconcile::PassResult::Outcome;
  metrics_->reconcile_runs->Add({{"result", reconcile::OutcomeName(pass.outcome)}}).Increment();
  metrics_->reconcile_duration->Observe(absl::ToDoubleSeconds(took));
  published_->SetFields(pass.converged, pass.fields);
  if (!pass.targets.ok()) {
    LOG_WARNING << "reconcile (" << reason << "): " << pass.targets.message();
    return;
  }
  if (pass.steps.empty()) return;
  const bool observe = pass.outcome == Outcome::kDriftObserved;
  if (!config_change) {
    metrics_->drift_detected->Increment(static_cast<double>(pass.steps.size()));
    LOG_WARNING << "drift (" << reason << "): " << pass.steps.size() << " field(s) differ"
                << (observe ? "; observe mode, leaving them" : "; correcting");
  }
  if (observe || !config_change) {
    for (size_t i = 0; i < pass.steps.size(); ++i) {
      const bool corrected = !observe && static_cast<int>(i) < pass.apply.steps_size() &&
                             pass.apply.steps(static_cast<int>(i)).outcome() == roced::v1::STEP_OUTCOME_APPLIED;
      bus_->Publish(reconcile::DriftEvent(pass.steps[i], corrected));
    }
  }
  if (observe) return;
  bus_->Publish(ReconcileEvent(generation, pass.apply));
  LOG_INFO << "reconcile (" << reason << "): " << (pass.apply.success() ? "applied " : "FAILED, rolled back ")
           << pass.steps.size() << " step(s) in " << absl::FormatDuration(took);
}

}  // namespace roced::agent

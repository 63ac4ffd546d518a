#include "agent/core/restore_queue.h"

#include "google/protobuf/util/time_util.h"
#include "reconcile/journal.h"
#include "util/log.h"

namespace roced::agent {

using google::protobuf::util::TimeUtil;

void RestoreQueue::LoadAtStartup(const std::optional<roced::v1::AcceptedConfig>& persisted) {
  std::optional<roced::v1::ApplyJournal> journal = dir_->LoadJournal();
  if (journal && !AdoptJournal(*journal, persisted)) dir_->RemoveJournal();
}

bool RestoreQueue::AdoptJournal(const roced::v1::ApplyJournal& journal,
                                const std::optional<roced::v1::AcceptedConfig>& persisted) {
  if (journal.for_generation() != 0 && persisted && persisted->generation() >= journal.for_generation()) {
    return false;  // the apply it guarded was accepted before the agent stopped
  }
  LOG_WARNING << "the agent stopped in the middle of an apply (" << journal.reason() << ", started "
              << TimeUtil::ToString(journal.started_at()) << "); writing back the " << journal.prior_size()
              << " value(s) it had changed before resuming";
  pending_ = reconcile::MergePrior(
      pending_, std::vector<roced::v1::PriorValue>(journal.prior().begin(), journal.prior().end()));
  return true;
}

void RestoreQueue::Add(const std::string& reason, const std::vector<roced::v1::PriorValue>& prior) {
  // Journal first, and everything still to be written back (a restore
  // already pending included).
  std::vector<roced::v1::PriorValue> merged = reconcile::MergePrior(prior, pending_);
  if (absl::Status s = dir_->WriteJournal(0, reason, merged); !s.ok()) {
    LOG_WARNING << "cannot journal the " << reason << ": " << s.message();
  }
  pending_ = std::move(merged);
}

std::optional<roced::v1::ApplyResult> RestoreQueue::Run(const std::string& reason, reconcile::NodeIo* io) {
  if (pending_.empty()) return std::nullopt;
  std::vector<reconcile::Target> targets;
  reconcile::Plan plan = reconcile::RestorePlan(pending_, io, &targets);
  if (plan.empty()) {
    Clear();
    return std::nullopt;
  }
  roced::v1::ApplyResult result = reconcile::ApplyPlan(plan, targets, io);
  for (const auto& sr : result.steps()) {
    LOG_INFO << "restore (" << reason << "): " << sr.step().object() << " " << sr.step().field() << " "
             << sr.step().current() << " -> " << sr.step().wanted() << ": "
             << roced::v1::StepOutcome_Name(sr.outcome()) << (sr.error().empty() ? "" : " ") << sr.error();
  }
  if (!result.success()) {
    LOG_ERROR << "restore (" << reason << ") failed; trying again on the next pass";
  } else {
    Clear();
  }
  return result;
}

void RestoreQueue::Drop() {
  if (pending_.empty()) return;
  LOG_WARNING << "dropping " << pending_.size() << " value(s) still to restore: superseded by ApplyConfig";
  Clear();
}

void RestoreQueue::Clear() {
  pending_.clear();
  dir_->RemoveJournal();
}

}  // namespace roced::agent

// The reconciler: one pass that takes a config and the discovered devices
// to a node that matches (or, in observe mode, to a report of what does
// not), with the back-off that keeps a step the node cannot satisfy from
// being retried in a tight loop.
//
// Owned by the agent; every call comes from one thread at a time (the
// agent serialises passes and config applies under its reconcile lock).
// The NodeIo is not owned and must outlive the Enforcer.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "reconcile/apply.h"
#include "reconcile/state.h"
#include "roced/v1/agent.pb.h"
#include "roced/v1/config.pb.h"
#include "roced/v1/state.pb.h"

namespace roced::reconcile {

// Which failed steps wait before they are tried again, by the status code
// of their failure (StepResult.code), never by field: RESOURCE_EXHAUSTED
// (the kernel lacks what the step asks for, e.g. a hugepage pool it filled
// only in part) waits `hold`; every other failure is retryable and tried on
// the next pass (drivers refuse transiently: a busy link, a reset in
// progress). An entry is keyed by (object, field, wanted value), so a new
// wanted value is tried at once, and is dropped once the step succeeds or
// the hold has passed.
class BackoffPolicy {
 public:
  explicit BackoffPolicy(absl::Duration hold) : hold_(hold) {}

  static bool Retryable(absl::StatusCode code) { return code != absl::StatusCode::kResourceExhausted; }

  // Records the outcome of `step` (the step the result is for).
  void Record(const Step& step, const roced::v1::StepResult& result, absl::Time now);
  // Until when `step` waits, or nullopt when it may be written now. `why`
  // gets the failure that started the wait.
  std::optional<absl::Time> HeldUntil(const Step& step, absl::Time now, std::string* why) const;

  absl::Duration hold() const { return hold_; }
  size_t size() const { return held_.size(); }

 private:
  using Key = std::tuple<std::string, Field, std::string>;
  static Key KeyOf(const Step& step);
  struct Entry {
    absl::Time until;
    std::string error;
  };
  const absl::Duration hold_;
  std::map<Key, Entry> held_;
};

// The result of one pass.
struct PassResult {
  enum class Outcome {
    kNoop,           // nothing to write (in sync, unsupported, or waiting out a back-off)
    kApplied,        // steps written and verified
    kFailed,         // an apply failed and was rolled back, or targets did not resolve
    kDriftObserved,  // observe mode: differences found and left
  };
  Outcome outcome = Outcome::kNoop;
  // The steps the pass found (after the back-off) and, when it wrote them,
  // what happened to each (parallel to `steps`). When nothing was written,
  // `apply` has no steps and success says whether the pass failed
  // (unresolved targets) or not.
  std::vector<Step> steps;
  roced::v1::ApplyResult apply;
  // Every managed field after the pass.
  std::vector<roced::v1::FieldStatus> fields;
  // The node matches the config in every field it manages.
  bool converged = false;
  // Set when the config's interfaces did not resolve on this node.
  absl::Status targets;
};

// "noop", "success", "failure", "drift_observed": the result label of
// roced_reconcile_runs_total.
const char* OutcomeName(PassResult::Outcome outcome);

// The DriftEvent for a step a pass found (corrected: it was written back).
roced::v1::StateEvent DriftEvent(const Step& step, bool corrected);

// A config resolved against the node, and the plan that would move it.
struct Prepared {
  std::vector<Target> targets;
  Plan plan;
};

class Enforcer {
 public:
  struct Options {
    // How long a RESOURCE_EXHAUSTED step waits before it is tried again.
    absl::Duration backoff = absl::Minutes(5);
    ApplyOptions apply;
  };
  // Whether a netdev without an RDMA device exists on this node.
  using NetdevExists = std::function<bool(const std::string&)>;

  Enforcer(NodeIo* io, NetdevExists netdev_exists, Options options);

  // Resolves `config`'s interfaces against `devices` (INVALID_ARGUMENT
  // naming the field when one names nothing here), observes and plans.
  absl::StatusOr<Prepared> Prepare(const roced::v1::NodeConfig& config,
                                   const std::vector<roced::v1::RdmaDevice>& devices);

  // Writes `prepared.plan` (ApplyPlan: verified, rolled back on failure).
  roced::v1::ApplyResult Apply(const Prepared& prepared);

  // One reconcile pass: prepare, hold back steps waiting out a back-off,
  // then report (observe mode) or apply, and observe again.
  PassResult Enforce(const roced::v1::NodeConfig& config,
                     const std::vector<roced::v1::RdmaDevice>& devices, absl::Time now);

  NodeIo* io() const { return io_; }

 private:
  // Drops the steps that wait; their fields say so (FAILED, with why and
  // when the next attempt is).
  void HoldBack(Plan* plan, absl::Time now) const;
  // The fields after an apply: observed again, with each failed step's error.
  std::vector<roced::v1::FieldStatus> FieldsAfter(const roced::v1::NodeConfig& config,
                                                  const Prepared& prepared,
                                                  const roced::v1::ApplyResult& result,
                                                  bool* in_sync);

  NodeIo* const io_;
  const NetdevExists netdev_exists_;
  const Options options_;
  BackoffPolicy backoff_;
};

}  // namespace roced::reconcile

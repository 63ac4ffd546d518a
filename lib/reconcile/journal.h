// What the node had before an apply changed it, kept so that the change can
// be undone later by someone other than the apply itself: the confirm-timeout
// rollback of a provisional config, and a restart after the agent died in
// the middle of an apply. Both restore every field the apply wrote,
// including fields the config being returned to does not manage (which a
// plain reconcile to that config would leave as the apply set them).
#pragma once

#include <vector>

#include "reconcile/apply.h"
#include "reconcile/state.h"
#include "roced/v1/state.pb.h"

namespace roced::reconcile {

// The pre-apply value of every step of `plan` (its `current`), with enough
// of its target to find the object again without the config.
std::vector<roced::v1::PriorValue> PriorValues(const Plan& plan, const std::vector<Target>& targets);

// `older` with the entries of `newer` added for objects and fields `older`
// has no entry for: the oldest value of a field is the one to return to.
std::vector<roced::v1::PriorValue> MergePrior(const std::vector<roced::v1::PriorValue>& older,
                                              const std::vector<roced::v1::PriorValue>& newer);

// The plan that writes `prior` back: one step per field whose value on the
// node (as `io` observes it now) differs, in the fixed apply order. Fields
// the node no longer has (a removed device or pool) are skipped. `targets`
// receives the targets the steps refer to.
Plan RestorePlan(const std::vector<roced::v1::PriorValue>& prior, NodeIo* io,
                 std::vector<Target>* targets);

}  // namespace roced::reconcile

#include "agent/core/confirm_clock.h"

#include "absl/time/clock.h"

namespace roced::agent {

void ConfirmClock::Arm(absl::Time deadline) {
  due_ = std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(deadline - absl::Now());
}

ConfirmClock::Remaining ConfirmClock::Check(absl::Time deadline) const {
  Remaining r{absl::FromChrono(due_ - std::chrono::steady_clock::now()), std::nullopt};
  const absl::Time wall = absl::Now() + r.left;
  if (absl::AbsDuration(wall - deadline) > absl::Seconds(1)) r.moved_deadline = wall;
  return r;
}

}  // namespace roced::agent

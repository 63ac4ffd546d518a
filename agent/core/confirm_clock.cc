#include "agent/core/confirm_clock.h"

namespace roced::agent {

void ConfirmClock::Arm(absl::Time deadline) { due_ = clock_->Monotonic() + (deadline - clock_->Now()); }

ConfirmClock::Remaining ConfirmClock::Check(absl::Time deadline) const {
  Remaining r{due_ - clock_->Monotonic(), std::nullopt};
  const absl::Time wall = clock_->Now() + r.left;
  if (absl::AbsDuration(wall - deadline) > absl::Seconds(1)) r.moved_deadline = wall;
  return r;
}

}  // namespace roced::agent

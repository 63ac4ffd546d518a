// A provisional config's confirm deadline on the monotonic clock: armed from
// the wall-clock deadline when the config is accepted (or resumed at
// start-up), so stepping the wall clock neither shortens nor stretches the
// window. Not thread-safe (the Agent holds it under its reconcile lock).
#pragma once

#include <optional>

#include "absl/time/time.h"
#include "util/clock.h"

namespace roced::agent {

class ConfirmClock {
 public:
  // Reads `clock` (null: util::RealClock()).
  explicit ConfirmClock(util::Clock* clock = nullptr) : clock_(clock != nullptr ? clock : util::RealClock()) {}

  // The window ends at wall-clock `deadline`, as of now.
  void Arm(absl::Time deadline);

  struct Remaining {
    absl::Duration left;
    // Set when the wall clock was stepped by more than a second since Arm:
    // the wall-clock deadline that keeps the window as long as it was (to
    // show and persist, so a restart keeps it too).
    std::optional<absl::Time> moved_deadline;
  };
  // How long is left; `deadline` is the wall-clock deadline on record.
  Remaining Check(absl::Time deadline) const;

 private:
  util::Clock* clock_;
  absl::Time due_ = absl::InfinitePast();  // on clock_->Monotonic()
};

}  // namespace roced::agent

// A provisional config's confirm deadline on the monotonic clock: armed from
// the wall-clock deadline when the config is accepted (or resumed at
// start-up), so stepping the wall clock neither shortens nor stretches the
// window. Not thread-safe (the Agent holds it under its reconcile lock).
#pragma once

#include <chrono>
#include <optional>

#include "absl/time/time.h"

namespace roced::agent {

class ConfirmClock {
 public:
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
  std::chrono::steady_clock::time_point due_;
};

}  // namespace roced::agent

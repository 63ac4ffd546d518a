// `rocectl rollout`'s own parts over lib/rollout: where the state file is
// kept by default and the table `rollout status` prints.
#pragma once

#include <string>

#include "roced/v1/rollout.pb.h"

namespace roced::ctl {

// $XDG_STATE_HOME/rocectl/rollout.json, else ~/.local/state/rocectl/
// rollout.json, else ./rocectl-rollout.json.
std::string DefaultRolloutStatePath();

// The table `rollout status` prints and the live view redraws: a header
// (phase, config, policy) and one row per node (name, batch, state,
// generation, gates or reason).
std::string RolloutTable(const roced::v1::RolloutState& state);

}  // namespace roced::ctl

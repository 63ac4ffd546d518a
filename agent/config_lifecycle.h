// Which config the agent takes up at start-up: a pure decision over what
// the state directory holds, what the config file says now, and the time.
//
// The rule is "the most recent deliberate change wins": a config pushed over
// gRPC survives restarts while the file is unchanged since the agent last
// read it (the push came after the file); a file whose content changed since
// then wins (an operator edited it after the push). A provisional config
// whose confirm deadline passed while the agent was down is returned from:
// its previous config comes back and the values the provisional apply
// overwrote are to be restored. Generations never go backwards.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "roced/v1/state.pb.h"

namespace roced::agent {

struct StartupChoice {
  // What to accept; its generation is assigned on acceptance as
  // base_generation + 1 (so resuming the persisted config keeps its number).
  roced::v1::AcceptedConfig accept;
  uint64_t base_generation = 0;
  // Values to write back before the first reconcile (an expired
  // provisional config's priors).
  std::vector<roced::v1::PriorValue> restore;
  // One line for the log: why this config.
  std::string why;
};

// The config a provisional one returns to when its deadline passes: its
// previous config, source CONFIRM_TIMEOUT, the same file path and digest.
roced::v1::AcceptedConfig ReturnFromProvisional(const roced::v1::AcceptedConfig& provisional);

// `persisted`: accepted.json, if any. `file`: the config file just read and
// validated (source FILE, its path and digest), or nullopt when there is
// none. Returns nullopt when there is nothing to accept (no file, nothing
// persisted that can be resumed).
std::optional<StartupChoice> ResolveStartupConfig(
    const std::optional<roced::v1::AcceptedConfig>& persisted,
    const std::optional<roced::v1::AcceptedConfig>& file, absl::Time now);

}  // namespace roced::agent

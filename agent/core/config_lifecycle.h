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

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "roced/v1/config.pb.h"
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

// The config a provisional one returns to when its deadline passes or a
// gate of its confirm policy fails: its previous config, the same file path
// and digest, source CONFIRM_TIMEOUT (reason "confirm_timeout") or
// CONFIRM_GATE, and `why` as its last rollback, with the generations filled
// in (the provisional one's, and the next).
roced::v1::AcceptedConfig ReturnFromProvisional(const roced::v1::AcceptedConfig& provisional,
                                                roced::v1::ConfigRollback why);

// `persisted`: accepted.json, if any. `file`: the config file just read and
// validated (source FILE, its path and digest), or nullopt when there is
// none. Returns nullopt when there is nothing to accept (no file, nothing
// persisted that can be resumed).
std::optional<StartupChoice> ResolveStartupConfig(
    const std::optional<roced::v1::AcceptedConfig>& persisted,
    const std::optional<roced::v1::AcceptedConfig>& file, absl::Time now);

// The config file read and validated: source FILE, its path, the digest of
// its text, the config with defaults applied. nullopt when `optional` and
// the file does not exist. Warnings go to the log; a rejected file is the
// error (with line, column and field path).
absl::StatusOr<std::optional<roced::v1::AcceptedConfig>> ReadConfigFile(const std::string& path,
                                                                        bool optional);

// What an ApplyConfig of `config` accepts over `current`: source GRPC,
// the agent's config file path and the digest last read. With a confirm timeout it is
// provisional: the config to return to (the one before any pending
// provisional one), the deadline, and for each field the oldest value a
// rollback restores (`current`'s priors, then `prior`).
roced::v1::AcceptedConfig AcceptFromApply(const roced::v1::AcceptedConfig& current,
                                          const std::string& config_path,
                                          const roced::v1::NodeConfig& config, absl::Duration confirm,
                                          absl::Time now, const std::vector<roced::v1::PriorValue>& prior);

// `provisional` made permanent: no deadline, previous config, priors,
// confirm policy or baseline.
roced::v1::AcceptedConfig Confirmed(const roced::v1::AcceptedConfig& provisional);

// Whether taking up `next` would change nothing (same config and source).
bool SameAccepted(const roced::v1::AcceptedConfig& current, const roced::v1::AcceptedConfig& next);

}  // namespace roced::agent

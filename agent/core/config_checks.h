// The checks a config passes before the Agent takes it up, beyond what
// model::ValidateConfig knows on its own: that it fits this node, that a
// persisted one still holds under this agent's rules, that an ApplyConfig
// asks for a confirm window it may have. Pure but for <procfs>/meminfo.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/core/state_dir.h"
#include "hal/paths.h"
#include "roced/v1/agent.pb.h"
#include "roced/v1/state.pb.h"

namespace roced::agent {

// The hugepage pools fit the node's memory (model::CheckHugepagesFitMemory
// over <procfs>/meminfo; unchecked, with a warning, when meminfo cannot be
// read).
absl::Status CheckFitsNode(const hal::Paths& paths, const roced::v1::NodeConfig& config);

// What is wrong with a persisted config (and with its previous one while it
// is provisional) under this agent's validation and this node's memory; one
// summary per config that fails, none when both hold.
std::vector<std::string> PersistedConfigErrors(const hal::Paths& paths, const roced::v1::AcceptedConfig& accepted);

// What the state directory holds at start-up (StateDir::LoadPersisted),
// with an accepted.json whose config no longer holds (PersistedConfigErrors)
// set aside and named in `problems`.
PersistedState LoadPersistedChecked(const StateDir& dir, const hal::Paths& paths);

// An ApplyConfig request before the agent takes its lock: the config
// validates (its warnings in `issues`), fits the node, and asks for at most
// one of confirm_timeout (0 to 24h) and a valid confirm_policy. Returns how
// long the config stays provisional (zero: permanent at once); a policy's
// window gets model::defaults::kConfirmPolicyGrace more, the deadline being
// the backstop should the guard not decide. INVALID_ARGUMENT naming the
// field otherwise.
absl::StatusOr<absl::Duration> CheckApplyRequest(const hal::Paths& paths, const roced::v1::ApplyConfigRequest& request,
                                                 std::vector<roced::v1::ValidationIssue>* issues);

}  // namespace roced::agent

// The StateEvents the agent publishes on WatchState about its config and its
// passes, built in one place from what they report. Pure.
#pragma once

#include <cstdint>
#include <string>

#include "roced/v1/agent.pb.h"
#include "roced/v1/state.pb.h"

namespace roced::agent {

// A reconcile or restore pass over generation `generation`.
roced::v1::StateEvent ReconcileEvent(uint64_t generation, const roced::v1::ApplyResult& result);
// `accepted` taken up as the desired state; with its rollback when it is
// the agent's own return from a provisional config.
roced::v1::StateEvent ConfigAcceptedEvent(const roced::v1::AcceptedConfig& accepted);
// The provisional `accepted` confirmed by `identity`.
roced::v1::StateEvent ConfigConfirmedEvent(const roced::v1::AcceptedConfig& accepted, const std::string& identity);
// A config refused (file or gRPC), with why.
roced::v1::StateEvent ConfigRejectedEvent(const std::string& error);

}  // namespace roced::agent

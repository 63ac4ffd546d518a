#include "agent/core/state_events.h"

namespace roced::agent {

roced::v1::StateEvent ReconcileEvent(uint64_t generation, const roced::v1::ApplyResult& result) {
  roced::v1::StateEvent ev;
  ev.mutable_reconcile()->set_generation(generation);
  *ev.mutable_reconcile()->mutable_result() = result;
  return ev;
}

roced::v1::StateEvent ConfigAcceptedEvent(const roced::v1::AcceptedConfig& accepted) {
  roced::v1::StateEvent ev;
  ev.mutable_config()->set_accepted(true);
  ev.mutable_config()->set_generation(accepted.generation());
  ev.mutable_config()->set_source(accepted.source());
  ev.mutable_config()->set_identity(accepted.applied_by());
  if (accepted.last_rollback().returned_to() == accepted.generation()) {
    *ev.mutable_config()->mutable_rollback() = accepted.last_rollback();
  }
  return ev;
}

roced::v1::StateEvent ConfigConfirmedEvent(const roced::v1::AcceptedConfig& accepted, const std::string& identity) {
  roced::v1::StateEvent ev;
  ev.mutable_config()->set_accepted(true);
  ev.mutable_config()->set_confirmed(true);
  ev.mutable_config()->set_generation(accepted.generation());
  ev.mutable_config()->set_source(accepted.source());
  ev.mutable_config()->set_identity(identity);
  return ev;
}

roced::v1::StateEvent ConfigRejectedEvent(const std::string& error) {
  roced::v1::StateEvent ev;
  ev.mutable_config()->set_accepted(false);
  ev.mutable_config()->set_error(error);
  return ev;
}

}  // namespace roced::agent

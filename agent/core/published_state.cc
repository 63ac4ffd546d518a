#include "agent/core/published_state.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/message_differencer.h"

#include "google/protobuf/util/time_util.h"
#include "roced/version.h"
#include "util/fs.h"

namespace roced::agent {

using google::protobuf::util::TimeUtil;

namespace {

// Two readings of a port with the same values (when they were read aside).
bool SameValues(roced::v1::InterfaceQos a, roced::v1::InterfaceQos b) {
  a.clear_observed_at();
  b.clear_observed_at();
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

}  // namespace

void MarkManaged(const google::protobuf::RepeatedPtrField<roced::v1::FieldStatus>& fields,
                 roced::v1::InterfaceQos* qos) {
  qos->clear_managed();
  const std::string rdma_port = absl::StrCat(qos->rdma_device(), "/", qos->port());
  std::set<std::string> seen;
  for (const auto& f : fields) {
    if (f.object() != qos->netdev() && f.object() != rdma_port) continue;
    if (seen.insert(f.field()).second) qos->add_managed(f.field());
  }
}

PublishedState::PublishedState() {
  std::lock_guard<std::mutex> lock(mu_);
  state_.set_hostname(util::Hostname());
  state_.mutable_agent()->set_version(kVersion);
  state_.mutable_agent()->set_git_commit(kGitCommit);
  *state_.mutable_agent()->mutable_started_at() = TimeUtil::GetCurrentTime();
}

roced::v1::NodeState PublishedState::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_;
}

std::vector<roced::v1::RdmaDevice> PublishedState::Devices() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {state_.devices().begin(), state_.devices().end()};
}

std::vector<roced::v1::RdmaDevice> PublishedState::SwapDevices(std::vector<roced::v1::RdmaDevice> devices) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<roced::v1::RdmaDevice> before(state_.devices().begin(), state_.devices().end());
  // Every discovery pass swaps; only a different list is a change.
  bool same = before.size() == devices.size();
  for (size_t i = 0; same && i < devices.size(); ++i) {
    same = before[i].SerializeAsString() == devices[i].SerializeAsString();
  }
  state_.clear_devices();
  for (auto& d : devices) *state_.add_devices() = std::move(d);
  *state_.mutable_observed_at() = TimeUtil::GetCurrentTime();
  if (!same) Bump();
  return before;
}

void PublishedState::SetComponentHealth(const std::string& name, bool healthy, const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  roced::v1::ComponentHealth* c = nullptr;
  for (auto& existing : *state_.mutable_agent()->mutable_components()) {
    if (existing.name() == name) c = &existing;
  }
  bool changed = c == nullptr;
  if (c == nullptr) {
    c = state_.mutable_agent()->add_components();
    c->set_name(name);
  }
  changed = changed || c->healthy() != healthy || c->message() != message;
  c->set_healthy(healthy);
  c->set_message(message);
  if (healthy) *c->mutable_last_success() = TimeUtil::GetCurrentTime();
  if (changed) Bump();
}

void PublishedState::SetAccepted(const roced::v1::AcceptedConfig& accepted) {
  std::lock_guard<std::mutex> lock(mu_);
  auto* cs = state_.mutable_config();
  cs->set_generation(accepted.generation());
  cs->set_source(accepted.source());
  cs->set_path(accepted.path());
  *cs->mutable_accepted_at() = accepted.accepted_at();
  cs->set_mode(accepted.config().mode());
  *cs->mutable_desired() = accepted.config();
  cs->set_applied_by(accepted.applied_by());
  cs->clear_last_error();
  cs->clear_confirm_deadline();
  cs->clear_confirm_policy();
  cs->clear_baseline();
  cs->clear_gates();
  if (accepted.provisional()) {
    *cs->mutable_confirm_deadline() = accepted.confirm_deadline();
    if (accepted.has_confirm_policy()) {
      *cs->mutable_confirm_policy() = accepted.confirm_policy();
      *cs->mutable_baseline() = accepted.baseline();
    }
  }
  if (accepted.has_last_rollback()) {
    *cs->mutable_last_rollback() = accepted.last_rollback();
  } else {
    cs->clear_last_rollback();
  }
  Bump();
}

void PublishedState::AddWarning(const std::string& warning) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& w : state_.agent().warnings()) {
    if (w == warning) return;
  }
  state_.mutable_agent()->add_warnings(warning);
  Bump();
}

void PublishedState::SetConfigError(const std::string& error) {
  std::lock_guard<std::mutex> lock(mu_);
  state_.mutable_config()->set_last_error(error);
  Bump();
}

void PublishedState::ClearConfigError() {
  std::lock_guard<std::mutex> lock(mu_);
  state_.mutable_config()->clear_last_error();
  Bump();
}

void PublishedState::SetConfirmDeadline(const google::protobuf::Timestamp& deadline) {
  std::lock_guard<std::mutex> lock(mu_);
  *state_.mutable_config()->mutable_confirm_deadline() = deadline;
  Bump();
}

void PublishedState::ClearProvisional() {
  std::lock_guard<std::mutex> lock(mu_);
  auto* cs = state_.mutable_config();
  cs->clear_confirm_deadline();
  cs->clear_confirm_policy();
  cs->clear_baseline();
  cs->clear_gates();
  Bump();
}

bool PublishedState::SetGates(uint64_t generation, const std::vector<roced::v1::GateStatus>& gates) {
  std::lock_guard<std::mutex> lock(mu_);
  auto* cs = state_.mutable_config();
  if (cs->generation() != generation || !cs->has_confirm_policy()) return false;
  bool same = static_cast<size_t>(cs->gates_size()) == gates.size();
  for (size_t i = 0; same && i < gates.size(); ++i) {
    same = cs->gates(static_cast<int>(i)).SerializeAsString() == gates[i].SerializeAsString();
  }
  if (same) return true;
  cs->clear_gates();
  for (const auto& g : gates) *cs->add_gates() = g;
  Bump();
  return true;
}

void PublishedState::SetFields(bool converged, const std::vector<roced::v1::FieldStatus>& fields) {
  std::lock_guard<std::mutex> lock(mu_);
  // Every reconcile pass reports; only a different outcome is a change.
  bool same = state_.config().converged() == converged && static_cast<size_t>(state_.fields_size()) == fields.size();
  for (size_t i = 0; same && i < fields.size(); ++i) {
    same = state_.fields(static_cast<int>(i)).SerializeAsString() == fields[i].SerializeAsString();
  }
  if (same) return;
  state_.mutable_config()->set_converged(converged);
  state_.clear_fields();
  for (const auto& f : fields) *state_.add_fields() = f;
  for (auto& q : *state_.mutable_interface_qos()) MarkManaged(state_.fields(), &q);
  Bump();
}

void PublishedState::SetInterfaceQos(std::vector<roced::v1::InterfaceQos> qos) {
  const google::protobuf::Timestamp now = TimeUtil::GetCurrentTime();
  std::lock_guard<std::mutex> lock(mu_);
  // Every reconcile pass reads the node; only different values are a change.
  bool same = static_cast<size_t>(state_.interface_qos_size()) == qos.size();
  for (size_t i = 0; i < qos.size(); ++i) {
    *qos[i].mutable_observed_at() = now;
    MarkManaged(state_.fields(), &qos[i]);
    same = same && SameValues(state_.interface_qos(static_cast<int>(i)), qos[i]);
  }
  state_.clear_interface_qos();
  for (auto& q : qos) *state_.add_interface_qos() = std::move(q);
  if (!same) Bump();
}

void PublishedState::Bump() {
  version_.fetch_add(1, std::memory_order_acq_rel);
  std::lock_guard<std::mutex> lock(listeners_mu_);
  for (const auto& [id, fn] : listeners_) fn();
}

void PublishedState::NotifyListeners() {
  std::lock_guard<std::mutex> lock(listeners_mu_);
  for (const auto& [id, fn] : listeners_) fn();
}

uint64_t PublishedState::AddListener(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(listeners_mu_);
  const uint64_t id = next_listener_++;
  listeners_.emplace(id, std::move(fn));
  return id;
}

void PublishedState::RemoveListener(uint64_t id) {
  std::lock_guard<std::mutex> lock(listeners_mu_);
  listeners_.erase(id);
}

}  // namespace roced::agent

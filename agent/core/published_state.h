// The NodeState the agent publishes (GetState, WatchState snapshots, the
// node metrics, diagnose): discovered devices, the accepted config's status,
// component health, and the field statuses and every RoCE port's QoS as
// the last reconcile pass found them.
//
// Threads: every method is thread-safe; mu_ is a leaf lock (taken after
// the agent's reconcile lock, never before it). Writers are the discovery
// loop (devices), the reconcile loop and config appliers (config, fields),
// and any component reporting its health.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "roced/v1/state.pb.h"

namespace roced::agent {

// Sets `qos->managed` to the config paths of `fields` (a pass's field
// statuses) whose object is the port's netdev or its "rdma_device/port".
void MarkManaged(const google::protobuf::RepeatedPtrField<roced::v1::FieldStatus>& fields,
                 roced::v1::InterfaceQos* qos);

class PublishedState {
 public:
  // Hostname, version, commit and start time are set once here.
  PublishedState();

  roced::v1::NodeState Snapshot() const;
  // Goes up with every change a reader could see (devices, config,
  // fields, warnings, a component's health or message; not the timestamps
  // alone), so a reader polling every second copies the state only when
  // it moved. Read it before Snapshot(): a change between the two is seen
  // on the next poll.
  uint64_t Version() const { return version_.load(std::memory_order_acquire); }
  // `fn` is called after every version change, on the thread that made it
  // and with the state's lock held: it must be quick and must not call back
  // into the state (signal a loop, as TriggeredLoop::Trigger does). So the
  // agent's threads that follow the state sleep until it changes instead of
  // polling the version. Returns an id for RemoveListener, which
  // the listener's owner calls before it goes away; once RemoveListener
  // returns, `fn` is not running and will not be called.
  uint64_t AddListener(std::function<void()> fn);
  void RemoveListener(uint64_t id);
  // Calls the listeners without a version change: for what changed on the
  // node that the state does not hold (a netlink event: PFC turned on or
  // off on a netdev no config manages, which the PFC watchdog must take up
  // now, not at its refresh's backstop).
  void NotifyListeners();
  std::vector<roced::v1::RdmaDevice> Devices() const;
  // Replaces the device list; returns the one it replaced.
  std::vector<roced::v1::RdmaDevice> SwapDevices(std::vector<roced::v1::RdmaDevice> devices);

  void SetComponentHealth(const std::string& name, bool healthy, const std::string& message);
  // Adds to AgentInfo.warnings (once per distinct text).
  void AddWarning(const std::string& warning);
  // The accepted config's generation, source, desired state and deadline;
  // clears last_error.
  void SetAccepted(const roced::v1::AcceptedConfig& accepted);
  void SetConfigError(const std::string& error);
  void ClearConfigError();
  // The provisional config was confirmed: no deadline, policy, baseline
  // or gates any more.
  void ClearProvisional();
  // The confirm guard's gates of provisional `generation` (a change only
  // when they differ). False when that generation is no longer the
  // provisional one with a policy (nothing set).
  bool SetGates(uint64_t generation, const std::vector<roced::v1::GateStatus>& gates);
  void SetConfirmDeadline(const google::protobuf::Timestamp& deadline);
  // The outcome of a reconcile pass.
  void SetFields(bool converged, const std::vector<roced::v1::FieldStatus>& fields);
  // The QoS a reconcile pass read of every RoCE port (reconcile::ObserveQos),
  // stamped now; each port's `managed` follows the fields (SetFields). A
  // change only when a value differs.
  void SetInterfaceQos(std::vector<roced::v1::InterfaceQos> qos);

 private:
  mutable std::mutex mu_;
  roced::v1::NodeState state_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> version_{1};
  std::mutex listeners_mu_;  // after mu_
  std::map<uint64_t, std::function<void()>> listeners_ ABSL_GUARDED_BY(listeners_mu_);
  uint64_t next_listener_ ABSL_GUARDED_BY(listeners_mu_) = 1;
  // Under mu_, after the change.
  void Bump();
};

}  // namespace roced::agent

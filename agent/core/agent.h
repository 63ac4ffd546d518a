// The agent's coordinator: it takes configs (file, gRPC, confirm
// timeouts), keeps the node in line with the accepted one, and publishes
// what it sees. The jobs are done by parts it owns:
//  - PublishedState: the NodeState behind GetState and /metrics;
//  - EventBus: the WatchState streams;
//  - DeviceDiscovery: sysfs + verbs contexts, and DiffDevices for events;
//  - StateDir + RestoreQueue: accepted.json, the apply journal, values to
//    write back;
//  - config_lifecycle: which config is taken up at start-up, and how an
//    ApplyConfig or a confirm becomes an AcceptedConfig (pure functions);
//  - reconcile::Enforcer: resolve, plan, apply, verify, with the back-off;
//  - PassReporter, DeviceRefresh: what one reconcile pass and one discovery
//    run leave behind (metrics, events, logs); ConfirmClock: a provisional
//    config's deadline on the monotonic clock; config_checks: what a config
//    must pass beyond validation (it fits the node, a persisted one still
//    holds, an ApplyConfig's confirm window).
// agent.cc holds the apply, confirm and reconcile paths; agent_startup.cc
// the config file's and start-up's. The runtimes, the gRPC services and the
// Daemon sit on top of it.
//
// Threads: Start() runs the discovery loop ("roced-discover": every
// discovery_interval and on netlink events), the reconcile loop
// ("roced-reconcile": accepted configs, netlink events, confirm deadlines,
// every reconcile.interval) and the netlink monitor thread. Every public
// method is thread-safe. Locks: reconcile_mu_ (accepting configs, passes)
// before PublishedState's; the event bus and the loops' own mutexes are
// leaves.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/core/agent_metrics.h"
#include "agent/core/backends.h"
#include "agent/core/confirm_clock.h"
#include "agent/core/device_refresh.h"
#include "agent/core/discovery.h"
#include "agent/core/event_bus.h"
#include "agent/core/pass_report.h"
#include "agent/core/published_state.h"
#include "agent/core/restore_queue.h"
#include "agent/core/state_dir.h"
#include "diagnose/checks.h"
#include "hal/link_monitor.h"
#include "hal/paths.h"
#include "model/defaults.h"
#include "prometheus/registry.h"
#include "reconcile/apply.h"
#include "reconcile/enforce.h"
#include "roced/v1/agent.pb.h"
#include "roced/v1/state.pb.h"
#include "util/triggered_loop.h"

namespace roced::agent {

struct AgentOptions {
  hal::Paths paths;
  // YAML config file; empty means none.
  std::string config_path;
  // When the config file is absent: true -> start without desired state
  // (warning), false -> LoadConfig() fails.
  bool config_optional = false;
  std::string state_dir;
  // Periodic device re-discovery, the backstop behind netlink events.
  absl::Duration discovery_interval = model::defaults::kDiscoveryInterval;
  // Join rtnetlink groups for immediate refresh.
  bool use_netlink = true;
  // The node's parts, from NodeBackends (main) or a test's fakes;
  // backends.node_io is required.
  AgentBackends backends;
  // Where the agent's metric families go: the registry main() exposes on
  // /metrics (the runtimes register theirs on it too). Null: one of its own.
  std::shared_ptr<prometheus::Registry> registry;
  // Run the reconcile loop (start-up, config changes, netlink events, and
  // every reconcile.interval).
  bool reconcile = true;
  // How long a step the node lacks the resources for (RESOURCE_EXHAUSTED:
  // a hugepage pool the kernel filled only in part) waits before it is
  // tried again; other failures are retried on the next pass.
  absl::Duration resource_backoff = absl::Minutes(5);
  // The clock every wait and timestamp of the agent reads (the discovery
  // and reconcile loops, the confirm window, acceptance times). Null:
  // util::RealClock(). Tests pass a util::SimulatedClock.
  util::Clock* clock = nullptr;
};

class Agent {
 public:
  explicit Agent(AgentOptions options);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Loads and validates the config file. On error the previously accepted
  // config stays in force and the error (with line, column, field path) is
  // returned and recorded in the state's config.last_error.
  //
  // At start-up (`startup`), the persisted accepted state is consulted
  // first: a config accepted over gRPC survives a restart unless the file
  // changed since it was last read (then the file wins: an operator edited
  // it). A provisional config whose deadline passed while the agent was down
  // is rolled back. On SIGHUP the file always wins.
  absl::Status LoadConfig(bool startup = false);

  // ApplyConfig over gRPC: validate, check expected_generation (ABORTED when
  // stale), resolve interfaces (INVALID_ARGUMENT naming the field), then
  // either return the plan (dry_run) or apply it. The config is accepted
  // and persisted only when the apply succeeds; a failed apply rolls the
  // node back and leaves the previous config in force (response.result
  // says what happened, generation stays). `identity` (who called) is kept
  // with the accepted config and sent in its ConfigEvent.
  //
  // With a confirm policy (validated here: INVALID_ARGUMENT naming the
  // field) the config is provisional for the policy's window plus
  // model::defaults::kConfirmPolicyGrace, and keeps the policy and `baseline` (what the
  // ConfirmGuard measured just before) with it; the guard then confirms it
  // or calls RollBackProvisional.
  absl::StatusOr<roced::v1::ApplyConfigResponse> ApplyConfig(
      const roced::v1::ApplyConfigRequest& request, const std::string& identity = "",
      const roced::v1::ConfirmBaseline& baseline = {});

  // Makes the pending provisional config permanent. FAILED_PRECONDITION
  // when none is pending, ABORTED when `generation` is not the pending one.
  absl::StatusOr<uint64_t> ConfirmConfig(uint64_t generation, const std::string& identity = "");

  // Returns from the pending provisional `generation` because `reason`
  // (a confirm-policy gate) failed, `detail` saying with what values: its
  // previous config is accepted (source CONFIRM_GATE, last_rollback set,
  // roced_config_rollbacks_total{reason}) and the overwritten values are
  // written back. FAILED_PRECONDITION when `generation` is not the pending
  // provisional one (confirmed or replaced meanwhile).
  absl::Status RollBackProvisional(uint64_t generation, const std::string& reason, const std::string& detail);
  // Returns from the pending provisional config now, as its deadline
  // would (reason "rollback", source ROLLBACK; `identity` in its detail).
  // FAILED_PRECONDITION when none is pending, ABORTED when `generation`
  // (0: any) is not the pending one. The rollback done.
  absl::StatusOr<roced::v1::ConfigRollback> RollBackNow(uint64_t generation, const std::string& identity = "");
  // The confirm policy's gates of provisional `generation`, for GetState;
  // false (nothing shown) when it is no longer the provisional one.
  bool SetConfirmGates(uint64_t generation, const std::vector<roced::v1::GateStatus>& gates);

  // One reconcile pass now (also what the loop runs).
  roced::v1::ApplyResult Reconcile(const std::string& reason);

  // What the diagnosis checks look at: the state, the kernel's QoS view of
  // each RoCE netdev (on the live /sys, or through the test's NodeIo), the
  // hugepage pools and the agent's memlock limit, and the host's view
  // (diagnose::GatherHost: NUMA, neighbours, ARP sysctls, clock). Probe
  // summaries and baselines, congestion samples, link flaps and LLDP
  // neighbours are added by the caller (AgentService, from the runtimes
  // that keep them).
  diagnose::Inputs DiagnoseInputs();

  // Re-discovers devices now; publishes device events for what changed.
  void RefreshDevices(const std::string& reason);

  // Starts the discovery loop and netlink monitor. Runs one discovery first.
  void Start();
  // Stops threads, closes verbs contexts and every subscription.
  void Stop();
  // Blocks, in real time for at most `timeout`, until the discovery and
  // reconcile loops wait with nothing pending: every pass asked for so far
  // has run. For tests that move AgentOptions::clock. False at the timeout.
  bool AwaitIdle(absl::Duration timeout = absl::Seconds(30));

  roced::v1::NodeState State() const;
  // PublishedState::Version(): read it first, copy State() when it moved.
  uint64_t StateVersion() const { return published_.Version(); }
  // See PublishedState::AddListener: `fn` runs after every state change.
  uint64_t AddStateListener(std::function<void()> fn) { return published_.AddListener(std::move(fn)); }
  void RemoveStateListener(uint64_t id) { published_.RemoveListener(id); }

  std::shared_ptr<Subscription> Subscribe() { return bus_.Subscribe(); }
  void Unsubscribe(const std::shared_ptr<Subscription>& sub) { bus_.Unsubscribe(sub); }

  // Sends `event` to every WatchState subscriber, stamped with the time.
  void PublishEvent(roced::v1::StateEvent event) { bus_.Publish(std::move(event)); }

  // Marks a component healthy or not (shown in GetState and metrics).
  void SetComponentHealth(const std::string& name, bool healthy, const std::string& message);
  // A warning shown in GetState (AgentInfo.warnings) and `rocectl status`.
  void AddWarning(const std::string& warning) { published_.AddWarning(warning); }

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

 private:
  void Publish(roced::v1::StateEvent event) { bus_.Publish(std::move(event)); }
  void TriggerReconcile(const std::string& reason);
  // The config file through ReadConfigFile, with the load recorded
  // (metrics, last_error, health) when it is rejected.
  absl::StatusOr<std::optional<roced::v1::AcceptedConfig>> ReadConfigFileRecorded();
  // At start-up: the decision between the persisted config and the file
  // (ResolveStartupConfig); queues an expired provisional config's priors.
  absl::StatusOr<std::optional<roced::v1::AcceptedConfig>> ResolveStartupLocked(
      const std::optional<roced::v1::AcceptedConfig>& persisted,
      const std::optional<roced::v1::AcceptedConfig>& file) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reconcile_mu_);
  // The reconcile loop: how long until the next periodic pass (the
  // interval, or sooner when a provisional config's deadline comes first),
  // and one pass (a due confirm-timeout rollback, else a reconcile).
  absl::Duration ReconcileWait() ABSL_LOCKS_EXCLUDED(reconcile_mu_);
  void ReconcilePass(const std::string& reason) ABSL_LOCKS_EXCLUDED(reconcile_mu_);
  // Records `accepted` as the desired state (generation assigned here),
  // persists it, publishes a ConfigEvent. A config pushed over gRPC must be
  // persisted (else the error, nothing changed); the config file's and a
  // confirm-timeout rollback's are taken up even when the state directory
  // cannot be written (the file is read again at start-up; the rollback
  // must happen), with the state component unhealthy saying so.
  enum class Persist { kRequired, kBestEffort };
  absl::Status Accept(roced::v1::AcceptedConfig accepted, Persist persist)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(reconcile_mu_);
  // At start-up: accepted.json and the generation floor, a persisted config
  // that no longer validates set aside; problems reported in the state
  // component.
  std::optional<roced::v1::AcceptedConfig> LoadPersistedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(reconcile_mu_);
  // The "state" component: unhealthy while the state directory cannot be
  // written, and after a start-up that found a state file unusable until a
  // config is accepted again (ApplyConfig, a reload).
  void ReportStateHealthLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(reconcile_mu_);
  void RecordPersist(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reconcile_mu_);
  // What is left of a provisional config's window (confirm_clock_). After
  // the wall clock is stepped, the wall-clock deadline shown and persisted
  // is moved to match (so a restart keeps the window).
  absl::Duration ConfirmRemainingLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(reconcile_mu_);
  // Writes the restore queue back (metrics and a reconcile event when it
  // wrote anything). False when the restore failed (it stays queued).
  bool RestoreLocked(const std::string& reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reconcile_mu_);
  // Returns from a provisional config (deadline passed, or a gate failed,
  // as `why` says): accepts its previous config and queues the priors for
  // restore.
  absl::Status RollBackProvisionalLocked(roced::v1::ConfigRollback why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(reconcile_mu_);
  // ApplyConfig once validated and under the lock: journal, apply, accept.
  absl::StatusOr<roced::v1::ApplyConfigResponse> ApplyLocked(const roced::v1::ApplyConfigRequest& request, const std::string& identity,
                                                            absl::Duration confirm,
                                                            const roced::v1::ConfirmBaseline& baseline,
                                                            roced::v1::ApplyConfigResponse response)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(reconcile_mu_);
  // A pass (with a config) and then PublishQosLocked.
  roced::v1::ApplyResult ReconcileLocked(const std::string& reason, bool config_change)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(reconcile_mu_);
  // Every RoCE port's QoS read through the NodeIo and published
  // (NodeState.interface_qos), config or none: what status shows besides
  // the managed fields.
  void PublishQosLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(reconcile_mu_);
  bool NetdevExists(const std::string& netdev) const;
  void RecordConfigError(const std::string& error);

  const AgentOptions options_;
  util::Clock* const clock_;
  const StateDir state_dir_;
  DeviceDiscovery discovery_;
  std::unique_ptr<hal::LinkMonitor> monitor_;
  PublishedState published_;
  EventBus bus_;
  std::shared_ptr<prometheus::Registry> registry_;
  const AgentMetrics metrics_;
  // Events, metrics and log lines of one pass.
  const PassReporter reporter_{&metrics_, &published_, &bus_};
  // One discovery run and its events (the discovery loop's).
  const DeviceRefresh device_refresh_{&discovery_, &metrics_, &published_, &bus_, clock_};

  // Serialises config acceptance and reconcile passes.
  std::mutex reconcile_mu_;
  roced::v1::AcceptedConfig accepted_ ABSL_GUARDED_BY(reconcile_mu_);
  reconcile::NodeIo* const io_;
  reconcile::Enforcer enforcer_ ABSL_GUARDED_BY(reconcile_mu_);
  RestoreQueue restore_ ABSL_GUARDED_BY(reconcile_mu_);
  // What the state component reports (ReportStateHealthLocked).
  std::string startup_problem_ ABSL_GUARDED_BY(reconcile_mu_);
  std::string persist_error_ ABSL_GUARDED_BY(reconcile_mu_);
  // A provisional config's confirm deadline on the monotonic clock.
  ConfirmClock confirm_clock_ ABSL_GUARDED_BY(reconcile_mu_){clock_};

  // Declared last: their threads call into everything above, so they are
  // stopped (by Stop, or their destructors) before it goes away.
  util::TriggeredLoop discovery_loop_;
  util::TriggeredLoop reconcile_loop_;
};

}  // namespace roced::agent

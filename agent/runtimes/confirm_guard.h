// The confirm guard: judges a provisional config that came with
// a confirm policy, and confirms it or rolls it back by itself.
//
// At ApplyConfig the gRPC service asks TakeBaseline for what the node saw
// just before: the mesh's loss and p99 over its window, the PFC storms
// counted so far. It refuses (FAILED_PRECONDITION, naming the gate) a
// policy the agent cannot judge: a mesh gate without the mesh, or with
// fewer than model::kMinGateProbes probes in the mesh's window.
//
// While such a config is pending, once a second, the guard gathers the
// gates' inputs from the agent's state (converged, via the readiness
// rule), the PFC watchdog (storms now and counted), the mesh (its probes
// of the slots that began after the apply) and latency probes to the named
// peers (run at the window's start, middle and shortly before its end),
// judges them (model::JudgeGates), shows them in GetState
// (ConfigStatus.gates), and at the first failed gate calls
// Agent::RollBackProvisional with the gate and its values; when every gate
// held to the window's end, Agent::ConfirmConfig. The window ends
// model::defaults::kConfirmPolicyGrace before the config's confirm deadline, which is
// persisted with the policy and the baseline: a restarted agent resumes
// judging. What it saw before the
// restart is lost, so a window that ends before the gates have their
// evidence again fails (the safe side).
//
// Threads: one loop, "roced-confirm": it sleeps until the agent's state
// changes while nothing is pending, and ticks every second while something
// is. Probes run on it (a few seconds at most each). Public methods are
// thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/core/agent.h"
#include "agent/runtimes/counters_runtime.h"
#include "agent/runtimes/mesh_runtime.h"
#include "agent/runtimes/probe_runtime.h"
#include "model/confirm_policy.h"
#include "roced/v1/state.pb.h"
#include "util/clock.h"
#include "util/triggered_loop.h"

namespace roced::agent {

// Who confirms a config whose gates held (ConfigEvent.identity).
inline constexpr char kConfirmGuardIdentity[] = "roced confirm policy";

struct ConfirmGuardOptions {
  absl::Duration tick = absl::Seconds(1);
  // The probe gates' runs: RC latency, this size and round trips.
  uint32_t probe_size = 64;
  uint32_t probe_iterations = 100;
  // The clock the window is measured on and the loop ticks on (the
  // Agent's; tests move it). Null: util::RealClock(). Not owned.
  util::Clock* clock = nullptr;
};

// Where the guard reads its gates' inputs; any may be null (a mesh gate is
// then refused at apply; no watchdog: no storm is ever seen, as on a
// fixture tree; no probe runtime: probe gates fail).
struct ConfirmSources {
  CountersRuntime* counters = nullptr;
  ProbeRuntime* probes = nullptr;
  const MeshRuntime* mesh = nullptr;
};

class ConfirmGuard {
 public:
  // `agent` and the sources must outlive the guard.
  ConfirmGuard(Agent* agent, ConfirmSources sources, ConfirmGuardOptions options = {});
  ~ConfirmGuard();
  ConfirmGuard(const ConfirmGuard&) = delete;
  ConfirmGuard& operator=(const ConfirmGuard&) = delete;

  void Start();
  void Stop();

  // What a policy's apply keeps: taken now. FAILED_PRECONDITION naming the
  // gate when the agent cannot judge it.
  absl::StatusOr<roced::v1::ConfirmBaseline> TakeBaseline(const roced::v1::ConfirmPolicy& policy) const;

  // One judgement now (what the loop runs): true while a provisional
  // config with a policy is pending.
  bool CheckOnce();

 private:
  // What the guard remembers of the generation it judges.
  struct Watch {
    uint64_t generation = 0;
    int not_converged = 0;
    int probe_rounds = 0;  // rounds started (0..3)
    std::map<std::string, model::ProbeGateRun> probes;
  };
  model::GateInputs Gather(const roced::v1::NodeState& state, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs the probe round that is due `elapsed` into `window`, if any.
  void RunDueProbes(const roced::v1::ConfirmPolicy& policy, absl::Duration elapsed) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  model::ProbeGateRun ProbeOnce(const std::string& peer) const;
  uint64_t PfcStorms(std::vector<std::string>* stormed) const;

  Agent* const agent_;
  const ConfirmSources sources_;
  const ConfirmGuardOptions options_;
  util::Clock* const clock_;
  std::mutex mu_;  // CheckOnce, one at a time
  std::optional<Watch> watch_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> pending_{false};
  uint64_t state_listener_ = 0;
  util::TriggeredLoop loop_;
};

}  // namespace roced::agent

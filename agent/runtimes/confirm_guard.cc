#include "agent/runtimes/confirm_guard.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "model/defaults.h"
#include "model/readiness.h"
#include "util/log.h"
#include "util/proto_time.h"

namespace roced::agent {

namespace {

using util::FromProto;

// When the probe rounds start, `elapsed` into a window: at once, at the
// middle, and shortly before the end (a quarter of the window, at most
// 10 s, so the last round finishes inside it).
int ProbeRoundsDue(absl::Duration elapsed, absl::Duration window) {
  const absl::Duration last = window - std::min(window / 4, absl::Seconds(10));
  if (elapsed >= last) return 3;
  if (elapsed >= window / 2) return 2;
  return 1;
}

bool HasMeshGate(const roced::v1::ConfirmPolicy& p) {
  return p.has_max_mesh_loss_increase() || p.has_max_mesh_p99_ratio();
}

}  // namespace

ConfirmGuard::ConfirmGuard(Agent* agent, ConfirmSources sources, ConfirmGuardOptions options)
    : agent_(agent),
      sources_(sources),
      options_(options),
      clock_(options.clock != nullptr ? options.clock : util::RealClock()),
      loop_({"roced-confirm", "periodic", false, clock_},
            [this] { return pending_.load() ? options_.tick : absl::InfiniteDuration(); },
            [this](const std::string&) { pending_.store(CheckOnce()); }) {}

ConfirmGuard::~ConfirmGuard() { Stop(); }

void ConfirmGuard::Start() {
  // A state change wakes the loop only while nothing is pending: while
  // something is, the tick drives it (the gates it shows change the state
  // themselves).
  state_listener_ = agent_->AddStateListener([this] {
    if (!pending_.load()) loop_.Trigger("state changed");
  });
  loop_.Start();
  loop_.Trigger("start-up");
}

void ConfirmGuard::Stop() {
  if (state_listener_ != 0) agent_->RemoveStateListener(state_listener_);
  state_listener_ = 0;
  loop_.Stop();
}

absl::StatusOr<roced::v1::ConfirmBaseline> ConfirmGuard::TakeBaseline(const roced::v1::ConfirmPolicy& policy) const {
  roced::v1::ConfirmBaseline b;
  *b.mutable_taken_at() = util::ToProto(clock_->Now());
  b.set_pfc_storms(PfcStorms(nullptr));
  if (!HasMeshGate(policy)) return b;
  const char* gate = policy.has_max_mesh_loss_increase() ? "max_mesh_loss_increase" : "max_mesh_p99_ratio";
  std::optional<mesh::WindowTotals> t;
  if (sources_.mesh != nullptr) t = sources_.mesh->TotalsSince(absl::InfinitePast());
  if (!t) {
    return absl::FailedPreconditionError(absl::StrCat(
        "confirm_policy.", gate, ": the mesh is not running on this agent (roced --mesh-inventory or --mesh-dns)"));
  }
  const uint64_t have = policy.has_max_mesh_p99_ratio() ? t->answered : t->sent;
  if (have < model::kMinGateProbes) {
    return absl::FailedPreconditionError(absl::StrCat(
        "confirm_policy.", gate, ": the mesh has ", have, policy.has_max_mesh_p99_ratio() ? " answered" : "",
        " probes in its window, fewer than the ", model::kMinGateProbes,
        " a baseline needs; apply again once the mesh has run for a window"));
  }
  b.set_mesh_sent(t->sent);
  b.set_mesh_lost(t->lost);
  if (t->p99_ns >= 0) *b.mutable_mesh_p99() = util::ToProto(absl::Nanoseconds(t->p99_ns));
  return b;
}

uint64_t ConfirmGuard::PfcStorms(std::vector<std::string>* stormed) const {
  if (sources_.counters == nullptr || sources_.counters->watchdog() == nullptr) return 0;
  uint64_t storms = 0;
  for (const auto& s : sources_.counters->watchdog()->Status()) {
    storms += s.storms;
    if (s.stormed && stormed != nullptr) stormed->push_back(absl::StrCat(s.netdev, " priority ", s.priority));
  }
  return storms;
}

model::ProbeGateRun ConfirmGuard::ProbeOnce(const std::string& peer) const {
  model::ProbeGateRun run;
  run.peer = peer;
  run.ran = true;
  if (sources_.probes == nullptr) {
    run.detail = "this agent does not run probes";
    return run;
  }
  roced::v1::RunProbeRequest request;
  request.set_peer(peer);
  request.set_kind(roced::v1::PROBE_KIND_LATENCY);
  request.set_size(options_.probe_size);
  request.set_iterations(options_.probe_iterations);
  absl::StatusOr<roced::v1::ProbeResult> r = sources_.probes->RunProbe(request);
  if (!r.ok()) {
    run.detail = absl::StrCat("probe refused: ", r.status().message());
  } else if (!r->success()) {
    run.detail = absl::StrCat("probe failed: ", r->failure_reason(),
                              r->failure_detail().empty() ? "" : absl::StrCat(" (", r->failure_detail(), ")"));
  } else {
    run.ok = true;
    run.detail = absl::StrFormat("%u round trips of %u B, one-way p50 %.1fus", r->iterations(), r->size(),
                                 r->latency().p50_us());
  }
  return run;
}

void ConfirmGuard::RunDueProbes(const roced::v1::ConfirmPolicy& policy, absl::Duration elapsed) {
  if (policy.probe_peers().empty()) return;
  const int due = ProbeRoundsDue(elapsed, FromProto(policy.window()));
  if (watch_->probe_rounds >= due) return;
  watch_->probe_rounds = due;
  for (const std::string& peer : policy.probe_peers()) {
    model::ProbeGateRun run = ProbeOnce(peer);
    // A failure stays: the gate failed at some moment of the window.
    auto it = watch_->probes.find(peer);
    if (it != watch_->probes.end() && it->second.ran && !it->second.ok) continue;
    watch_->probes[peer] = std::move(run);
  }
}

model::GateInputs ConfirmGuard::Gather(const roced::v1::NodeState& state, absl::Time now) {
  const roced::v1::ConfigStatus& cs = state.config();
  // The deadline is the window's end and the grace (it moves with a step
  // of the wall clock, and the window with it).
  const absl::Duration window = FromProto(cs.confirm_policy().window());
  const absl::Time end = FromProto(cs.confirm_deadline()) - model::defaults::kConfirmPolicyGrace;
  const absl::Time start = end - window;
  model::GateInputs in;
  model::Readiness ready = model::ReadinessOf(state, now);
  for (const auto& c : ready.checks) {
    if (c.name != "converged") continue;
    watch_->not_converged = c.ok ? 0 : watch_->not_converged + 1;
    in.not_converged_fields = c.detail;
  }
  in.not_converged_checks = watch_->not_converged;
  in.pfc_storms = PfcStorms(&in.stormed);
  if (sources_.mesh != nullptr) {
    if (std::optional<mesh::WindowTotals> t = sources_.mesh->TotalsSince(start)) {
      in.mesh_since = model::MeshSample{.sent = t->sent, .lost = t->lost, .p99 = std::nullopt};
      if (t->p99_ns >= 0) in.mesh_since->p99 = absl::Nanoseconds(t->p99_ns);
    }
  }
  RunDueProbes(cs.confirm_policy(), now - start);
  for (const auto& [peer, run] : watch_->probes) in.probes.push_back(run);
  in.window_over = now >= end;
  return in;
}

bool ConfirmGuard::CheckOnce() {
  std::lock_guard<std::mutex> lock(mu_);
  const roced::v1::NodeState state = agent_->State();
  const roced::v1::ConfigStatus& cs = state.config();
  if (!cs.has_confirm_policy() || !cs.has_confirm_deadline()) {
    watch_.reset();
    return false;
  }
  if (!watch_ || watch_->generation != cs.generation()) {
    // Watch{} here, where ConfirmGuard is complete: clang cannot default-
    // construct a nested struct with member initializers inside emplace().
    watch_.emplace(Watch{});
    watch_->generation = cs.generation();
    LOG_INFO << "judging provisional generation " << cs.generation() << " by its confirm policy ("
             << model::DescribeConfirmPolicy(cs.confirm_policy()) << ")";
  }
  model::GateInputs in = Gather(state, clock_->Now());
  model::GateVerdict v = model::JudgeGates(cs.confirm_policy(), cs.baseline(), in);
  if (!agent_->SetConfirmGates(cs.generation(), v.gates)) return true;  // replaced meanwhile: look again
  if (!v.failed_reason.empty()) {
    if (absl::Status s = agent_->RollBackProvisional(cs.generation(), v.failed_reason, v.failed_detail); !s.ok()) {
      LOG_WARNING << "confirm policy: " << s.message();
    }
    watch_.reset();
    return true;  // look at whatever is in force now
  }
  if (v.confirm) {
    if (absl::StatusOr<uint64_t> c = agent_->ConfirmConfig(cs.generation(), kConfirmGuardIdentity); !c.ok()) {
      LOG_WARNING << "confirm policy: confirming generation " << cs.generation() << ": " << c.status().message();
    } else {
      LOG_INFO << "generation " << cs.generation() << " held every gate of its confirm policy for "
               << absl::FormatDuration(FromProto(cs.confirm_policy().window())) << "; confirmed";
    }
    watch_.reset();
  }
  return true;
}

}  // namespace roced::agent

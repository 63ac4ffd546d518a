// `rocectl rollout`: one config across the fleet, batch by batch, each node
// judged by the agent under a confirm policy. The plan, the
// outcomes and the resume decisions are lib/rollout's (rollout/rollout.h); this
// file makes the calls, records every change in the state file's journal
// (rollout::RolloutStateWriter, rollout/state_file.h) and shows the progress.
//
// Crash safety rests on the order of writes: a node is recorded as
// "applying" with its previous generation and config (fdatasync'd) before
// ApplyConfig is sent, and as "waiting" with the new generation once the
// answer is back, so a rocectl killed between any two steps leaves a state
// from which `rollout resume` can tell, with one GetState, whether the call
// landed.
//
// Threads: at most kMaxDrivers at once. A batch's nodes are applied by
// that many, then every node waiting for its outcome is polled by one loop
// (each round at most kMaxDrivers calls at once, a round a second), so a
// batch of any size waits one window, not one per kMaxDrivers nodes.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "google/protobuf/struct.pb.h"
#include "model/confirm_policy.h"
#include "model/defaults.h"
#include "model/validate.h"
#include "roced/v1/agent.grpc.pb.h"
#include "tools/rocectl/apply_cmd.h"
#include "tools/rocectl/call.h"
#include "tools/rocectl/commands.h"
#include "rollout/rollout.h"
#include "rollout/state_file.h"
#include "tools/rocectl/rollout_table.h"
#include "util/fs.h"
#include "util/proto_time.h"
#include "util/resolve.h"

namespace roced::ctl {
namespace {

// --targets FILE: at most kMaxRolloutTargets lines of HOST:PORT (a DNS name
// and a port each), well under this.
constexpr size_t kMaxTargetsFileBytes = 32u << 20;

using roced::rollout::AssignProbePeers;
using roced::rollout::Classified;
using roced::rollout::ClassifyOutcome;
using roced::rollout::DecideApplying;
using roced::rollout::DecideReverting;
using roced::rollout::GateSummary;
using roced::rollout::LoadRolloutState;
using roced::rollout::NewRolloutState;
using roced::rollout::NodeDone;
using roced::rollout::NodeFailed;
using roced::rollout::NodeStateName;
using roced::rollout::Outcome;
using roced::rollout::ParseMaxUnavailable;
using roced::rollout::ParseOnFailure;
using roced::rollout::ParseTargets;
using roced::rollout::PhaseName;
using roced::rollout::PlanBatches;
using roced::rollout::ResetFailedForRetry;
using roced::rollout::ResumeDecision;
using roced::rollout::Resumed;
using roced::rollout::RolloutStateWriter;
using roced::rollout::RolloutTarget;
using roced::rollout::Unfinished;
using roced::rollout::kDefaultProbePeers;
using roced::rollout::kDefaultRolloutPolicy;
using roced::rollout::kOutcomeGrace;
using roced::v1::RolloutNode;
using roced::v1::RolloutState;

// How often a waiting node's GetState is asked.
constexpr absl::Duration kPollInterval = absl::Seconds(1);
// The most nodes driven (applied, polled, reverted) at once, each on its
// own thread with its own call in flight.
constexpr size_t kMaxDrivers = 128;

struct RolloutFlags {
  std::string file;
  std::string targets;
  std::string dns;
  uint64_t canary = 1;
  std::string max_unavailable = "1";
  std::string on_failure = "pause";
  std::string confirm_policy;
  uint64_t probe_peers = kDefaultProbePeers;
  std::string state;
};

// One JSON object on one line, its keys in the order added (a Struct's
// map would print them in any order; `event` comes first for people
// reading the stream). Values are printed by the proto3 JSON mapping.
class JsonLine {
 public:
  JsonLine& Str(absl::string_view key, const std::string& value) {
    google::protobuf::Value v;
    v.set_string_value(value);
    return Add(key, v);
  }
  JsonLine& Num(absl::string_view key, double value) {
    google::protobuf::Value v;
    v.set_number_value(value);
    return Add(key, v);
  }
  std::string Done() const { return absl::StrCat("{", out_, "}"); }

 private:
  JsonLine& Add(absl::string_view key, const google::protobuf::Value& value) {
    absl::StrAppend(&out_, out_.empty() ? "" : ",", "\"", key, "\":", ToJsonLine(value));
    return *this;
  }
  std::string out_;
};

// How progress is shown: a table redrawn in place on a terminal, one line
// per event otherwise, one JSON object per event under -o json.
enum class View { kLive, kLines, kJson };

class Progress {
 public:
  explicit Progress(View view) : view_(view) {}
  View view() const { return view_; }

  // One event: `kind` ("node_confirmed"), the node it is about (or null)
  // and what happened, for people.
  void Event(const RolloutState& state, absl::string_view kind, const RolloutNode* node, const std::string& text) {
    const std::string time = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
    if (view_ == View::kJson) {
      JsonLine line;
      line.Str("event", std::string(kind)).Str("time", time).Str("phase", PhaseName(state.phase()));
      if (node != nullptr) AddNode(*node, &line);
      std::cout << line.Str("message", text).Done() << "\n" << std::flush;
    } else if (view_ == View::kLines) {
      std::cout << time << "  " << (node != nullptr ? node->name() + ": " : "") << text << "\n" << std::flush;
    } else {
      last_ = absl::StrCat(time, "  ", node != nullptr ? node->name() + ": " : "", text);
      Redraw(state);
    }
  }

  // The closing summary: -o json's last object.
  void Summary(const RolloutState& state, const std::string& path) {
    if (view_ != View::kJson) return;
    JsonLine line;
    line.Str("event", "summary").Str("phase", PhaseName(state.phase())).Num("nodes", state.nodes_size());
    std::map<std::string, int> counts;
    for (const auto& n : state.nodes()) ++counts[NodeStateName(n.state())];
    for (const auto& [name, count] : counts) line.Num(name, count);
    if (!state.halted_by().empty()) line.Str("halted_by", state.halted_by()).Str("halt_reason", state.halt_reason());
    std::cout << line.Str("state_file", path).Done() << "\n" << std::flush;
  }

 private:
  static void AddNode(const RolloutNode& n, JsonLine* line) {
    line->Str("node", n.name()).Str("address", n.address()).Num("batch", n.batch());
    line->Str("state", NodeStateName(n.state()));
    line->Num("previous_generation", static_cast<double>(n.previous_generation()));
    line->Num("generation", static_cast<double>(n.generation()));
    if (!n.reason().empty()) line->Str("reason", n.reason());
    if (!n.detail().empty()) line->Str("detail", n.detail());
    if (!n.gates().empty()) line->Str("gates", GateSummary(n.gates()));
    if (n.reverted_generation() != 0) line->Num("reverted_generation", static_cast<double>(n.reverted_generation()));
  }

  // The table and the last event, over what was drawn before (cursor up,
  // clear to the end of the screen). Each line is cut to the terminal's
  // width: a wrapped line would take rows the cursor-up does not count.
  void Redraw(const RolloutState& state) {
    struct winsize ws {};
    const size_t width = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col - 1 : 159;
    std::string text;
    size_t lines = 0;
    for (absl::string_view line : absl::StrSplit(absl::StrCat(RolloutTable(state), "\n", last_), '\n')) {
      absl::StrAppend(&text, line.substr(0, width), "\n");
      ++lines;
    }
    if (drawn_ > 0) std::cout << "\033[" << drawn_ << "A\033[J";
    std::cout << text << std::flush;
    drawn_ = lines;
  }

  const View view_;
  std::string last_;
  size_t drawn_ = 0;
};

// The rollout as it runs: the state (under mu_, recorded after every
// change), one channel per node, the calls.
class Runner {
 public:
  Runner(const CommandContext& ctx, RolloutStateWriter* writer, RolloutState state, Progress* progress)
      : ctx_(ctx), writer_(writer), state_(std::move(state)), progress_(progress) {
    config_ = state_.config();
    policy_ = state_.confirm_policy();
    sent_config_ = config_;
    model::ApplyDefaults(&sent_config_);  // as the agent keeps it as desired
    window_ = util::FromProto(state_.confirm_policy().window());
    for (const auto& n : state_.nodes()) channels_.push_back(ctx_.connect(n.address()));
  }

  // From wherever the state file says the rollout is. The exit code.
  int Run() {
    if (state_.phase() == roced::v1::ROLLOUT_PHASE_REVERTING) return RevertAll();
    AnnounceGates();
    for (int b = 0; b < state_.batch_sizes_size(); ++b) {
      bool failed = false;
      for (const auto& n : state_.nodes()) failed |= n.batch() == static_cast<uint32_t>(b) && NodeFailed(n.state());
      // After a failure (a rocectl that died mid-batch) only the nodes
      // already under way are seen to their end; none is started.
      std::vector<size_t> todo;
      for (int i = 0; i < state_.nodes_size(); ++i) {
        const RolloutNode& n = state_.nodes(i);
        if (n.batch() != static_cast<uint32_t>(b) || NodeDone(n.state())) continue;
        if (!failed || n.state() != roced::v1::ROLLOUT_NODE_STATE_PENDING) todo.push_back(static_cast<size_t>(i));
      }
      if (!todo.empty()) {
        Announce("batch_started",
                 absl::StrCat("batch ", b, (b == 0 ? " (canary)" : ""), ": ", todo.size(), " node(s)"));
        // Each node to its "waiting" (or an end), then all of them to
        // their outcomes.
        ForEach(todo, kMaxDrivers, [this](size_t i) { Drive(i); });
        WaitAll(todo);
      }
      // The whole batch has its outcomes before the rollout halts: nodes
      // already provisional end one way or the other by themselves.
      for (const auto& n : state_.nodes()) {
        if (n.batch() == static_cast<uint32_t>(b) && NodeFailed(n.state())) return Halt();
      }
    }
    ChangeRollout("rollout_done", [](RolloutState* s) { s->set_phase(roced::v1::ROLLOUT_PHASE_DONE); },
                  absl::StrCat("every node (", state_.nodes_size(), ") confirmed the config"));
    return kExitOk;
  }

  const RolloutState& state() const { return state_; }

 private:
  // Before the first batch: each node's gates and probe peers, and a
  // warning when no gate sends traffic.
  void AnnounceGates() {
    constexpr int kShown = 4;
    std::string text = absl::StrCat("each node's gates: ", model::DescribeConfirmPolicy(policy_));
    std::map<std::string, std::string> name_of;  // address -> the name shown
    for (const auto& n : state_.nodes()) name_of[n.address()] = n.name();
    int with_peers = 0;
    for (const auto& n : state_.nodes()) {
      if (n.probe_peers().empty()) continue;
      if (with_peers++ == 0) absl::StrAppend(&text, "; probes (over RDMA, in the new config's RoCE class):");
      if (with_peers > kShown) continue;
      absl::StrAppend(&text, " ", n.name(), " -> ");
      for (int p = 0; p < n.probe_peers_size(); ++p) absl::StrAppend(&text, p ? ", " : "", name_of[n.probe_peers(p)]);
      absl::StrAppend(&text, ";");
    }
    if (with_peers > kShown) {
      absl::StrAppend(&text, " and ", with_peers - kShown, " more (`rollout status -o json`: nodes[].probePeers)");
    }
    Announce("gates", text);
    if (with_peers == 0 && !model::SendsTraffic(policy_)) {
      const std::string warning = absl::StrCat(
          "WARNING: no gate sends traffic (no probe peers, no mesh gates): a config that breaks RoCE traffic "
          "is confirmed as long as it converges. ",
          state_.nodes_size() < 2 ? "There is no other target to probe; name peers with probe= in --confirm-policy."
                                  : "--probe-peers N (default 2) or probe= in --confirm-policy.");
      Announce("warning", warning);
      std::cerr << "rocectl: " << warning << "\n";
    }
  }

  // Under the lock: `change` to node i, recorded in the journal, shown as
  // `event`. `durable`: on disk (fdatasync) before this returns, for the
  // steps a call follows ("applying", "reverting"); the others survive a
  // killed rocectl as they are and, lost with the machine, are found again
  // by resume's GetState.
  void Change(size_t i, absl::string_view event, const std::function<void(RolloutNode*)>& change,
              const std::string& text, bool durable = false) {
    std::lock_guard<std::mutex> lock(mu_);
    change(state_.mutable_nodes(static_cast<int>(i)));
    *state_.mutable_updated_at() = util::ToProto(absl::Now());
    Saved(writer_->Record(&state_, static_cast<int>(i), durable));
    progress_->Event(state_, event, &state_.nodes(static_cast<int>(i)), text);
  }

  // A change to the rollout as a whole (its phase): a snapshot.
  void ChangeRollout(absl::string_view event, const std::function<void(RolloutState*)>& change,
                     const std::string& text) {
    std::lock_guard<std::mutex> lock(mu_);
    change(&state_);
    *state_.mutable_updated_at() = util::ToProto(absl::Now());
    Saved(writer_->Snapshot(&state_));
    progress_->Event(state_, event, nullptr, text);
  }

  // An event that changes no state: shown, not recorded.
  void Announce(absl::string_view event, const std::string& text) {
    std::lock_guard<std::mutex> lock(mu_);
    progress_->Event(state_, event, nullptr, text);
  }

  void Saved(const absl::Status& s) {
    if (!s.ok() && s.ToString() != save_error_) {
      save_error_ = s.ToString();
      std::cerr << "rocectl: rollout state not saved (resume would not know the latest step): " << s.message()
                << "\n";
    }
  }

  RolloutNode Snapshot(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return state_.nodes(static_cast<int>(i));
  }

  grpc::Status GetState(size_t i, roced::v1::NodeState* out) {
    return CallAgent(channels_[i], ctx_.timeout, &roced::v1::Agent::Stub::GetState, roced::v1::GetStateRequest(),
                     out);
  }

  grpc::Status Apply(size_t i, const roced::v1::ApplyConfigRequest& req, roced::v1::ApplyConfigResponse* out) {
    return CallAgent(channels_[i], ctx_.timeout, &roced::v1::Agent::Stub::ApplyConfig, req, out);
  }

  std::string Describe(const grpc::Status& s, size_t i) { return DescribeRpcError(s, Snapshot(i).address()); }

  void Fail(size_t i, const std::string& reason, const std::string& detail) {
    Change(
        i, "node_failed",
        [&](RolloutNode* n) {
          n->set_state(roced::v1::ROLLOUT_NODE_STATE_FAILED);
          n->set_reason(reason);
          n->set_detail(detail);
          *n->mutable_finished_at() = util::ToProto(absl::Now());
        },
        absl::StrCat("FAILED: ", reason, ": ", detail));
  }

  // `fn` over `nodes`, at most `limit` at a time, each on a thread.
  static void ForEach(const std::vector<size_t>& nodes, size_t limit, const std::function<void(size_t)>& fn) {
    std::atomic<size_t> next{0};
    std::vector<std::thread> threads;
    for (size_t t = 0; t < std::min(limit, nodes.size()); ++t) {
      threads.emplace_back([&] {
        for (size_t k = next++; k < nodes.size(); k = next++) fn(nodes[k]);
      });
    }
    for (std::thread& t : threads) t.join();
  }

  // A node waiting for its outcome: when to give up, what was last seen.
  struct Waiter {
    size_t node = 0;
    uint64_t generation = 0;
    absl::Time deadline;
    std::string gates;
    std::string last_error;
  };

  void Drive(size_t i);
  void Send(size_t i);
  bool AdoptIfLanded(size_t i);
  void WaitAll(const std::vector<size_t>& nodes);
  bool Poll(Waiter* w);
  int Halt();
  int RevertAll();
  void Revert(size_t i);
  void SendRevert(size_t i);
  void Landed(size_t i, uint64_t generation, const std::string& how);

  const CommandContext& ctx_;
  RolloutStateWriter* const writer_;  // under mu_
  std::mutex mu_;
  RolloutState state_;
  Progress* const progress_;
  // Copies, read by the nodes' threads without the lock.
  roced::v1::NodeConfig config_;
  roced::v1::ConfirmPolicy policy_;
  roced::v1::NodeConfig sent_config_;
  absl::Duration window_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::string save_error_;
};

// A node from wherever it stands to "waiting" (WaitAll takes it from
// there) or an end.
void Runner::Drive(size_t i) {
  const RolloutNode node = Snapshot(i);
  if (node.state() != roced::v1::ROLLOUT_NODE_STATE_PENDING &&
      node.state() != roced::v1::ROLLOUT_NODE_STATE_APPLYING) {
    return;
  }
  roced::v1::NodeState now;
  if (grpc::Status s = GetState(i, &now); !s.ok()) return Fail(i, "unreachable", Describe(s, i));
  if (node.state() == roced::v1::ROLLOUT_NODE_STATE_PENDING) {
    // What it has now is what a rollback returns it to: recorded before
    // the apply is sent.
    Change(
        i, "node_applying",
        [&](RolloutNode* n) {
          n->set_state(roced::v1::ROLLOUT_NODE_STATE_APPLYING);
          n->set_previous_generation(now.config().generation());
          *n->mutable_previous_config() = now.config().desired();
          *n->mutable_applied_at() = util::ToProto(absl::Now());
        },
        absl::StrCat("applying over generation ", now.config().generation()), /*durable=*/true);
    return Send(i);
  }
  // Recorded as applying by a rocectl that died: did its call land?
  const ResumeDecision d = DecideApplying(node, sent_config_, now.config());
  if (d.what == Resumed::kSendAgain) return Send(i);
  if (d.what == Resumed::kChangedElsewhere) return Fail(i, "changed_elsewhere", d.detail);
  Landed(i, d.generation, "found accepted");
}

void Runner::Landed(size_t i, uint64_t generation, const std::string& how) {
  Change(
      i, "node_waiting",
      [&](RolloutNode* n) {
        n->set_state(roced::v1::ROLLOUT_NODE_STATE_WAITING);
        n->set_generation(generation);
      },
      absl::StrCat(how, " as generation ", generation, "; the agent judges the gates"));
}

void Runner::Send(size_t i) {
  const RolloutNode node = Snapshot(i);
  roced::v1::ApplyConfigRequest req;
  *req.mutable_config() = config_;
  *req.mutable_confirm_policy() = policy_;
  if (!node.probe_peers().empty()) *req.mutable_confirm_policy()->mutable_probe_peers() = node.probe_peers();
  req.set_expected_generation(node.previous_generation());
  roced::v1::ApplyConfigResponse resp;
  const grpc::Status s = Apply(i, req, &resp);
  if (!s.ok()) {
    // Lost on the way back? Then the node is provisional and judges itself.
    if ((s.error_code() == grpc::StatusCode::UNAVAILABLE ||
         s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) &&
        AdoptIfLanded(i)) {
      return;
    }
    const char* reason = s.error_code() == grpc::StatusCode::ABORTED ? "aborted"
                         : s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                                 s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
                             ? "unreachable"
                             : "refused";
    return Fail(i, reason, Describe(s, i));
  }
  if (!resp.result().success()) {
    std::vector<std::string> errors;
    for (const auto& step : resp.result().steps()) {
      if (!step.error().empty()) errors.push_back(step.error());
    }
    return Fail(i, "apply_failed",
                absl::StrCat("the apply failed and was undone at once: ", absl::StrJoin(errors, "; ")));
  }
  // The config already in force (pushed the same way before) changes
  // nothing, not even the generation: its outcome is that generation's.
  Landed(i, resp.generation(), resp.generation() == node.previous_generation() ? "already in force" : "accepted");
}

bool Runner::AdoptIfLanded(size_t i) {
  roced::v1::NodeState now;
  if (!GetState(i, &now).ok()) return false;
  const ResumeDecision d = DecideApplying(Snapshot(i), sent_config_, now.config());
  if (d.what != Resumed::kLanded) return false;
  Landed(i, d.generation, "accepted (its answer was lost)");
  return true;
}

// Until each of `nodes` that is waiting confirms or rolls back its
// generation G by itself, or the window and kOutcomeGrace have passed since
// its apply: every one asked once a round, a round a second (longer when
// calls time out), at most kMaxDrivers calls at once.
void Runner::WaitAll(const std::vector<size_t>& nodes) {
  std::vector<Waiter> waiting;
  for (size_t i : nodes) {
    const RolloutNode n = Snapshot(i);
    if (n.state() != roced::v1::ROLLOUT_NODE_STATE_WAITING) continue;
    waiting.push_back({i, n.generation(), util::FromProto(n.applied_at()) + window_ + kOutcomeGrace,
                       GateSummary(n.gates()), ""});
  }
  while (!waiting.empty()) {
    const absl::Time round = absl::Now();
    std::vector<size_t> slots(waiting.size());
    for (size_t k = 0; k < slots.size(); ++k) slots[k] = k;
    std::vector<char> done(waiting.size(), 0);
    ForEach(slots, kMaxDrivers, [&](size_t k) { done[k] = Poll(&waiting[k]) ? 1 : 0; });
    std::vector<Waiter> left;
    for (size_t k = 0; k < waiting.size(); ++k) {
      if (done[k] == 0) left.push_back(std::move(waiting[k]));
    }
    waiting = std::move(left);
    if (!waiting.empty()) absl::SleepFor(round + kPollInterval - absl::Now());
  }
}

// One look at a waiting node: true once it has an outcome.
bool Runner::Poll(Waiter* w) {
  const size_t i = w->node;
  roced::v1::NodeState now;
  if (grpc::Status s = GetState(i, &now); !s.ok()) {
    w->last_error = Describe(s, i);
  } else {
    const Classified c = ClassifyOutcome(now.config(), w->generation);
    if (c.outcome == Outcome::kConfirmed) {
      Change(
          i, "node_confirmed",
          [&](RolloutNode* n) {
            n->set_state(roced::v1::ROLLOUT_NODE_STATE_CONFIRMED);
            *n->mutable_gates() = now.config().gates();
            *n->mutable_finished_at() = util::ToProto(absl::Now());
          },
          absl::StrCat("confirmed generation ", w->generation));
      return true;
    }
    if (c.outcome == Outcome::kRolledBack) {
      Change(
          i, "node_rolled_back",
          [&](RolloutNode* n) {
            n->set_state(roced::v1::ROLLOUT_NODE_STATE_ROLLED_BACK);
            n->set_reason(c.reason);
            n->set_detail(c.detail);
            *n->mutable_finished_at() = util::ToProto(absl::Now());
          },
          absl::StrCat("ROLLED BACK generation ", w->generation, " by itself: ", c.reason, ": ", c.detail));
      return true;
    }
    if (c.outcome != Outcome::kWaiting) {
      Fail(i, c.reason, c.detail);
      return true;
    }
    if (std::string g = GateSummary(now.config().gates()); g != w->gates) {
      w->gates = g;
      Change(i, "node_gates", [&](RolloutNode* n) { *n->mutable_gates() = now.config().gates(); }, "gates: " + g);
    }
  }
  if (absl::Now() <= w->deadline) return false;
  Fail(i, "no_outcome",
       absl::StrCat("neither confirmed nor rolled back within the window (", absl::FormatDuration(window_), ") and ",
                    absl::FormatDuration(kOutcomeGrace), w->last_error.empty() ? "" : "; last error: ",
                    w->last_error));
  return true;
}

int Runner::Halt() {
  const RolloutNode* first = nullptr;
  int untouched = 0;
  for (const auto& n : state_.nodes()) {
    if (first == nullptr && NodeFailed(n.state())) first = &n;
    untouched += n.state() == roced::v1::ROLLOUT_NODE_STATE_PENDING;
  }
  const std::string who =
      first->name() == first->address() ? first->name() : absl::StrCat(first->name(), " (", first->address(), ")");
  const std::string why = absl::StrCat(first->reason(), ": ", first->detail());
  if (state_.on_failure() == roced::v1::ROLLOUT_ON_FAILURE_ROLLBACK) {
    ChangeRollout(
        "rollout_reverting",
        [&](RolloutState* s) {
          s->set_phase(roced::v1::ROLLOUT_PHASE_REVERTING);
          s->set_halted_by(who);
          s->set_halt_reason(why);
          for (RolloutNode& n : *s->mutable_nodes()) {
            if (n.state() == roced::v1::ROLLOUT_NODE_STATE_PENDING) n.set_state(roced::v1::ROLLOUT_NODE_STATE_SKIPPED);
          }
        },
        absl::StrCat("halted by ", who, " (", why, "); returning the confirmed nodes to their previous config"));
    return RevertAll();
  }
  ChangeRollout(
      "rollout_halted",
      [&](RolloutState* s) {
        s->set_phase(roced::v1::ROLLOUT_PHASE_HALTED);
        s->set_halted_by(who);
        s->set_halt_reason(why);
      },
      absl::StrCat("halted by ", who));
  std::cerr << "rocectl: rollout halted: " << who << " failed: " << why << "\n";
  if (untouched > 0) std::cerr << "rocectl: the " << untouched << " node(s) not yet done are untouched\n";
  std::cerr << "rocectl: `rocectl rollout resume` retries the failed node(s) and goes on\n";
  return kExitFindings;  // the rollout ran; its gates found the config wanting
}

int Runner::RevertAll() {
  std::vector<size_t> todo;
  uint32_t limit = 1;
  for (uint32_t size : state_.batch_sizes()) limit = std::max(limit, size);
  for (int i = 0; i < state_.nodes_size(); ++i) {
    const auto s = state_.nodes(i).state();
    if (s == roced::v1::ROLLOUT_NODE_STATE_CONFIRMED || s == roced::v1::ROLLOUT_NODE_STATE_REVERTING) {
      todo.push_back(static_cast<size_t>(i));
    }
  }
  // No more nodes at once than the rollout changed at once.
  ForEach(todo, std::min<size_t>(limit, kMaxDrivers), [this](size_t i) { Revert(i); });
  std::vector<std::string> kept;
  for (const auto& n : state_.nodes()) {
    if (n.state() == roced::v1::ROLLOUT_NODE_STATE_CONFIRMED || n.reason() == "revert_failed") {
      kept.push_back(absl::StrCat(n.name(), " (", n.detail(), ")"));
    }
  }
  ChangeRollout("rollout_reverted", [](RolloutState* s) { s->set_phase(roced::v1::ROLLOUT_PHASE_REVERTED); },
                absl::StrCat("rolled back after ", state_.halted_by(), " failed: ", state_.halt_reason()));
  std::cerr << "rocectl: rollout rolled back: " << state_.halted_by() << " failed: " << state_.halt_reason() << "\n";
  if (!kept.empty()) {
    std::cerr << "rocectl: not returned to their previous config: " << absl::StrJoin(kept, "; ") << "\n";
  }
  return kExitFindings;
}

// A confirmed node back to the config it had before the rollout.
void Runner::Revert(size_t i) {
  const RolloutNode node = Snapshot(i);
  if (node.state() == roced::v1::ROLLOUT_NODE_STATE_CONFIRMED && node.previous_generation() == 0) {
    return Change(
        i, "node_not_reverted",
        [](RolloutNode* n) { n->set_detail("cannot be returned: it had no config before the rollout (generation 0)"); },
        "cannot be returned: it had no config before the rollout (generation 0); it keeps the new one");
  }
  if (node.state() == roced::v1::ROLLOUT_NODE_STATE_CONFIRMED && node.generation() == node.previous_generation()) {
    return Change(
        i, "node_reverted",
        [](RolloutNode* n) {
          n->set_state(roced::v1::ROLLOUT_NODE_STATE_REVERTED);
          n->set_detail("the config was already in force: nothing to return");
        },
        "the config was already in force before the rollout: nothing to return");
  }
  roced::v1::NodeState now;
  if (grpc::Status s = GetState(i, &now); !s.ok()) {
    return Fail(i, "revert_failed", absl::StrCat("not returned: ", Describe(s, i)));
  }
  if (node.state() == roced::v1::ROLLOUT_NODE_STATE_REVERTING) {
    const ResumeDecision d = DecideReverting(node, now.config());
    if (d.what == Resumed::kChangedElsewhere) return Fail(i, "revert_failed", d.detail);
    if (d.what == Resumed::kSendAgain) return SendRevert(i);
    return Change(
        i, "node_reverted",
        [&](RolloutNode* n) {
          n->set_state(roced::v1::ROLLOUT_NODE_STATE_REVERTED);
          n->set_reverted_generation(d.generation);
        },
        absl::StrCat("found returned to its previous config as generation ", d.generation));
  }
  // Sent against the rollout's generation, not whatever the node has now:
  // a change someone made since the rollout confirmed is not undone
  // unknowingly (ABORTED says so).
  Change(
      i, "node_reverting",
      [&](RolloutNode* n) {
        n->set_state(roced::v1::ROLLOUT_NODE_STATE_REVERTING);
        n->set_revert_from(node.generation());
      },
      absl::StrCat("returning to the config of generation ", node.previous_generation()), /*durable=*/true);
  SendRevert(i);
}

void Runner::SendRevert(size_t i) {
  const RolloutNode node = Snapshot(i);
  roced::v1::ApplyConfigRequest req;
  *req.mutable_config() = node.previous_config();
  req.set_expected_generation(node.revert_from());
  roced::v1::ApplyConfigResponse resp;
  if (grpc::Status s = Apply(i, req, &resp); !s.ok()) {
    return Fail(i, "revert_failed", absl::StrCat("not returned: ", Describe(s, i)));
  }
  if (!resp.result().success()) {
    return Fail(i, "revert_failed", "not returned: the apply of the previous config failed and was undone");
  }
  Change(
      i, "node_reverted",
      [&](RolloutNode* n) {
        n->set_state(roced::v1::ROLLOUT_NODE_STATE_REVERTED);
        n->set_reverted_generation(resp.generation());
      },
      absl::StrCat("returned to its previous config as generation ", resp.generation()));
}

// The state file locked for this process (flock on FILE.lock, released
// by the kernel however rocectl ends): two rollouts on one state would
// each believe its own record. -1 after saying why.
int LockState(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ignored;  // open() says what is wrong
  if (!parent.empty()) std::filesystem::create_directories(parent, ignored);
  const std::string lock = path + ".lock";
  // O_NOFOLLOW|O_NONBLOCK: a symlink or a FIFO planted at the lock's path
  // is refused, not followed or waited on.
  int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0640);
  if (fd < 0) {
    std::cerr << "rocectl: --state: " << util::ErrnoToStatus(errno, "open " + lock).message() << "\n";
    return -1;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    std::cerr << "rocectl: another rocectl rollout is working on " << path << " (" << lock << " is locked)\n";
    ::close(fd);
    return -1;
  }
  return fd;
}

View ViewFor(const CommandContext& ctx) {
  if (ctx.output == Output::kJson) return View::kJson;
  return ctx.output == Output::kTable && isatty(STDOUT_FILENO) == 1 ? View::kLive : View::kLines;
}

int RunStatus(const CommandContext& ctx, const std::string& path) {
  absl::StatusOr<RolloutState> state = LoadRolloutState(path);
  if (!state.ok()) {
    std::cerr << "rocectl: rollout status: "
              << (absl::IsNotFound(state.status()) ? absl::StrCat("no rollout state at ", path, " (--state FILE)")
                                                   : std::string(state.status().message()))
              << "\n";
    return kExitFailed;
  }
  if (ctx.output == Output::kTable) {
    std::cout << RolloutTable(*state);
  } else {
    std::cout << (ctx.output == Output::kJson ? ToJson(*state) : ToYaml(*state));
  }
  return kExitOk;
}

// `fresh`: a new rollout (any older journal removed first); else a resumed
// one, its journal folded into a snapshot before anything is appended (so
// nothing follows a torn last line).
int RunFrom(const CommandContext& ctx, const std::string& path, RolloutState state, bool fresh) {
  RolloutStateWriter writer(path);
  if (absl::Status s = fresh ? writer.Start(&state) : writer.Snapshot(&state); !s.ok()) {
    std::cerr << "rocectl: --state: " << s.message() << "\n";
    return kExitFailed;
  }
  Progress progress(ViewFor(ctx));
  Runner runner(ctx, &writer, std::move(state), &progress);
  const int rc = runner.Run();
  progress.Summary(runner.state(), path);
  return rc;
}

int RunResume(const CommandContext& ctx, const std::string& path) {
  const int lock = LockState(path);
  if (lock < 0) return kExitFailed;
  absl::StatusOr<RolloutState> state = LoadRolloutState(path);
  if (!state.ok()) {
    std::cerr << "rocectl: rollout resume: "
              << (absl::IsNotFound(state.status()) ? absl::StrCat("no rollout state at ", path, " (--state FILE)")
                                                   : std::string(state.status().message()))
              << "\n";
    return kExitFailed;
  }
  if (!Unfinished(*state)) {
    std::cerr << "rocectl: rollout resume: nothing to resume: the rollout in " << path << " is "
              << PhaseName(state->phase()) << "\n";
    return state->phase() == roced::v1::ROLLOUT_PHASE_DONE ? kExitOk : kExitFindings;
  }
  if (int n = ResetFailedForRetry(&*state); n > 0) {
    std::cerr << "rocectl: rollout resume: retrying " << n << " failed node(s)\n";
  }
  return RunFrom(ctx, path, *std::move(state), /*fresh=*/false);
}

// --targets FILE or --dns NAME[:PORT]: the agents to roll out to. Usage
// errors are said here (false).
bool Targets(const RolloutFlags& flags, std::vector<RolloutTarget>* out) {
  if (!flags.targets.empty() == !flags.dns.empty()) {
    std::cerr << "rocectl: rollout: give one of --targets FILE and --dns NAME[:PORT]\n";
    return false;
  }
  if (!flags.targets.empty()) {
    absl::StatusOr<std::string> text = util::ReadRegularFile(flags.targets, kMaxTargetsFileBytes, "targets file");
    absl::StatusOr<std::vector<RolloutTarget>> parsed =
        text.ok() ? ParseTargets(*text) : absl::StatusOr<std::vector<RolloutTarget>>(text.status());
    if (!parsed.ok()) {
      std::cerr << "rocectl: --targets " << flags.targets << ": " << parsed.status().message() << "\n";
      return false;
    }
    *out = *std::move(parsed);
    return true;
  }
  const bool has_port = flags.dns.find(':') != std::string::npos;
  auto dns = util::ParseNamePort(
      "--dns", has_port ? flags.dns : absl::StrCat(flags.dns, ":", model::defaults::kGrpcPort));
  if (!dns.ok()) {
    std::cerr << "rocectl: " << dns.status().message() << "\n";  // names --dns
    return false;
  }
  absl::StatusOr<std::vector<std::string>> addresses = util::ResolveAll(dns->first, dns->second);
  if (!addresses.ok()) {
    std::cerr << "rocectl: --dns: " << addresses.status().message() << "\n";
    return false;
  }
  for (const std::string& a : *addresses) out->push_back({a, a});
  return true;
}

// A new rollout from the flags, or the exit code of what stopped it.
absl::StatusOr<RolloutState> NewRollout(const RolloutFlags& flags, int* rc) {
  *rc = kExitUsage;
  auto on_failure = ParseOnFailure(flags.on_failure);
  if (!on_failure.ok()) return on_failure.status();
  if (flags.probe_peers > model::kMaxConfirmProbePeers) {
    return absl::InvalidArgumentError(absl::StrCat("--probe-peers: ", flags.probe_peers, " is out of range; allowed 0-",
                                                   model::kMaxConfirmProbePeers));
  }
  auto policy = LoadConfirmPolicy(flags.confirm_policy.empty() ? kDefaultRolloutPolicy : flags.confirm_policy);
  if (!policy.ok()) return policy.status();
  std::vector<RolloutTarget> targets;
  if (!Targets(flags, &targets)) return absl::CancelledError();  // said
  auto max_unavailable = ParseMaxUnavailable(flags.max_unavailable, targets.size());
  if (!max_unavailable.ok()) return max_unavailable.status();
  auto batches = PlanBatches(targets.size(), flags.canary, *max_unavailable);
  if (!batches.ok()) return batches.status();
  *rc = kExitFailed;
  auto config = LoadNodeConfig(flags.file);
  if (!config.ok()) return config.status();
  RolloutState state = NewRolloutState(targets, *batches);
  // Peers from the targets unless the policy names its own.
  if (policy->probe_peers().empty() && flags.probe_peers > 0) {
    AssignProbePeers(&state, static_cast<uint32_t>(flags.probe_peers));
  }
  state.set_config_path(flags.file);
  *state.mutable_config() = *config;
  *state.mutable_confirm_policy() = *policy;
  state.set_canary(static_cast<uint32_t>(flags.canary));
  state.set_max_unavailable(flags.max_unavailable);
  state.set_on_failure(*on_failure);
  *state.mutable_started_at() = util::ToProto(absl::Now());
  return state;
}

int RunStart(const CommandContext& ctx, const RolloutFlags& flags, const std::string& path) {
  if (flags.file.empty() || flags.file == "-") {
    std::cerr << "rocectl: rollout: -f FILE is required (a NodeConfig YAML file; not stdin: resume re-reads "
                 "nothing but the state file, which keeps the config)\n";
    return kExitUsage;
  }
  if (!ctx.connect) {
    std::cerr << "rocectl: rollout calls agents over TCP: give --ca, --cert and --key (or ROCECTL_CA, "
                 "ROCECTL_CERT, ROCECTL_KEY), or --insecure\n";
    return kExitUsage;
  }
  int rc = kExitOk;
  absl::StatusOr<RolloutState> state = NewRollout(flags, &rc);
  if (!state.ok()) {
    if (absl::IsCancelled(state.status())) return rc;
    const bool issues = rc == kExitFailed && absl::IsInvalidArgument(state.status());
    std::cerr << (issues ? "" : "rocectl: ") << state.status().message() << (issues ? "" : "\n");
    return rc;
  }
  const int lock = LockState(path);
  if (lock < 0) return kExitFailed;
  if (absl::StatusOr<RolloutState> old = LoadRolloutState(path); !old.ok() && !absl::IsNotFound(old.status())) {
    std::cerr << "rocectl: rollout: " << old.status().message() << "; remove it to start a new rollout\n";
    return kExitFailed;
  } else if (old.ok() && Unfinished(*old)) {
    std::cerr << "rocectl: rollout: " << path << " holds an unfinished rollout of " << old->config_path()
              << " (phase " << PhaseName(old->phase())
              << "): `rocectl rollout resume` finishes it and `rocectl rollout status` shows it; remove the "
                 "file to start a new one\n";
    return kExitFailed;
  }
  return RunFrom(ctx, path, *std::move(state), /*fresh=*/true);
}

int RunRollout(const CommandContext& ctx, const RolloutFlags& flags, const std::vector<std::string>& args) {
  const std::string path = flags.state.empty() ? DefaultRolloutStatePath() : flags.state;
  if (args.size() > 1 || (args.size() == 1 && args[0] != "status" && args[0] != "resume")) {
    std::cerr << "rocectl: usage: rocectl rollout -f FILE (--targets FILE | --dns NAME[:PORT]) [--canary N] "
                 "[--max-unavailable N|P%] [--on-failure pause|rollback] [--confirm-policy SPEC|FILE] "
                 "[--probe-peers N] [--state FILE]\n       rocectl rollout status|resume [--state FILE]\n";
    return kExitUsage;
  }
  if (args.empty()) return RunStart(ctx, flags, path);
  if (args[0] == "status") return RunStatus(ctx, path);
  if (!ctx.connect) {
    std::cerr << "rocectl: rollout resume calls agents over TCP: give --ca, --cert and --key, or --insecure\n";
    return kExitUsage;
  }
  return RunResume(ctx, path);
}

}  // namespace

CommandRun BindRollout(util::ArgParser* parser) {
  auto f = std::make_shared<RolloutFlags>();
  parser->AddString("file", &f->file, "FILE", "rollout: the NodeConfig YAML to roll out. It is validated here first.",
                    'f');
  parser->AddString("targets", &f->targets, "FILE",
                    "rollout: HOST:PORT or NAME ADDRESS [TOR [POD]] a line. As the mesh inventory; "
                    "'#' comments and blank lines allowed. Batches follow the file's order.");
  parser->AddString("dns", &f->dns, "NAME[:PORT]",
                    absl::StrCat("rollout: every address NAME resolves to (port ", model::defaults::kGrpcPort,
                                 "). In address order."));
  parser->AddUint("canary", &f->canary, "N", "rollout: nodes in the first batch (1 to --max-unavailable).");
  parser->AddString("max-unavailable", &f->max_unavailable, "N|P%",
                    "rollout: nodes changing at once: N, or P% of the targets. P is 1-100, rounded down, at "
                    "least 1 node. Batches double from the canary up to this.");
  parser->AddString("on-failure", &f->on_failure, "pause|rollback",
                    "rollout: on a failed node: pause (stop) or rollback (also undo the confirmed nodes). "
                    "pause leaves the nodes done as they are; rollback also returns every node already "
                    "confirmed to its previous config.");
  parser->AddString("confirm-policy", &f->confirm_policy, "SPEC|FILE",
                    absl::StrCat("rollout: each node's gates (a YAML file or an apply spec). Default: ",
                                 kDefaultRolloutPolicy, "."));
  parser->AddUint("probe-peers", &f->probe_peers, "N",
                  absl::StrCat("rollout: other targets each node probes when the policy names none (0-8, "
                               "default ", kDefaultProbePeers,
                               "). One already on the new config and one not, where the batches allow. "
                               "0: no probe gate; nothing then sends traffic (said at the start)."));
  parser->AddString("state", &f->state, "FILE",
                    "rollout: state file and FILE.journal, read by status/resume. The journal has a line "
                    "per step. "
                    "Default: $XDG_STATE_HOME/rocectl/rollout.json (~/.local/state/rocectl/rollout.json).");
  return [f](const CommandContext& ctx, const std::vector<std::string>& args) { return RunRollout(ctx, *f, args); };
}

}  // namespace roced::ctl

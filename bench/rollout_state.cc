// bench/rollout_state: what `rocectl rollout`'s state file writes over a
// whole rollout, no agents needed: the state is driven through the steps
// the rollout's Runner records (tools/rocectl/rollout_cmd.cc), in its order,
// and written two ways:
//   new  the snapshot and journal (RolloutStateWriter, as the Runner uses
//        it: a snapshot at the start and the end, one line per step, the
//        "applying" lines fdatasync'd, a snapshot whenever the journal has
//        grown to the snapshot's size), written to DIR for real;
//   old  the whole state rewritten after every step (SaveRolloutState,
//        atomically), which the journal replaced. Its bytes are counted
//        exactly without writing them (hundreds of GB at 10,000 nodes):
//        the state's JSON size, updated by each step's change to one node's
//        JSON; --old-real also writes it after every step and sums the
//        files' sizes, which must agree.
// Per node: applying (previous generation and a config of --config-bytes
// of JSON), waiting (its generation), its gates (two), confirmed. Per batch
// the old scheme also saved at "batch_started". Timestamps come from a fake
// clock with fixed-width values, so sizes do not depend on when it runs.
//
//   build/bin/roced_rollout_state --nodes N [--max-unavailable N|P%]
//                                 [--config-bytes B] [--dir DIR] [--old-real]
// Prints one line of key=value: nodes, batches, old_saves, config_bytes,
// old_bytes, [old_real_bytes, old_seconds,] new_bytes, ratio (old/new),
// new_snapshots, new_peak_bytes (snapshot + journal on disk at most),
// new_seconds, state_bytes (the final snapshot), verified (the files read
// back equal the state in memory).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "model/defaults.h"
#include "rollout/rollout.h"
#include "rollout/state_file.h"

namespace {

using roced::v1::RolloutNode;
using roced::v1::RolloutState;

struct Args {
  size_t nodes = 100;
  std::string max_unavailable = "10%";
  size_t config_bytes = 1024;
  std::string dir;
  bool old_real = false;
};

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr,
               "roced_rollout_state: %s\nusage: roced_rollout_state --nodes N [--max-unavailable N|P%%] "
               "[--config-bytes B] [--dir DIR] [--old-real]\n",
               why.c_str());
  std::exit(2);
}

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (f == "--old-real") {
      a.old_real = true;
      continue;
    }
    if (i + 1 >= argc) Usage(f + " needs a value");
    const std::string v = argv[++i];
    if (f == "--nodes") {
      if (!absl::SimpleAtoi(v, &a.nodes) || a.nodes < 1 || a.nodes > roced::rollout::kMaxRolloutTargets) {
        Usage("--nodes: not a number of targets");
      }
    } else if (f == "--max-unavailable") {
      a.max_unavailable = v;
    } else if (f == "--config-bytes") {
      if (!absl::SimpleAtoi(v, &a.config_bytes) || a.config_bytes > 1000000) Usage("--config-bytes: not a size");
    } else if (f == "--dir") {
      a.dir = v;
    } else {
      Usage("unknown flag " + f);
    }
  }
  if (a.dir.empty()) Usage("--dir is required");
  return a;
}

// SaveRolloutState's rendering: indented, every field.
size_t JsonSize(const RolloutState& state) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.always_print_primitive_fields = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(state, &json, opts).ok()) Usage("state to JSON failed");
  return json.size();
}

// The old scheme's state had no journal_seq: its JSON without it.
size_t OldJsonSize(RolloutState state) {
  state.clear_journal_seq();
  return JsonSize(state);
}

size_t CompactSize(const google::protobuf::Message& m) {
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(m, &json);
  return json.size();
}

// A node's share of the whole state's JSON, plus a constant: a state
// holding it alone renders it at the same depth.
size_t NodeShare(const RolloutNode& node) {
  RolloutState alone;
  *alone.add_nodes() = node;
  return JsonSize(alone);
}

// A NodeConfig of at least `bytes` of compact JSON: interfaces with a
// DSCP map each, as a real fleet's config would hold.
roced::v1::NodeConfig ConfigOf(size_t bytes) {
  roced::v1::NodeConfig c;
  c.set_api_version("roced/v1");
  c.set_kind("NodeConfig");
  std::string json;
  for (int i = 0; json.size() < bytes; ++i) {
    auto* itf = c.add_interfaces();
    itf->mutable_match()->set_netdev(absl::StrCat("ens", i, "f0np0"));
    itf->set_mtu(9000);
    itf->mutable_qos()->set_trust(roced::v1::TRUST_DSCP);
    for (uint32_t d = 0; d < 64 && json.size() < bytes; d += 2) {
      (*itf->mutable_qos()->mutable_dscp_to_priority())[d] = d % 8;
      json.clear();
      (void)google::protobuf::util::MessageToJsonString(c, &json);
    }
  }
  return c;
}

// Fixed-width timestamps: step k is k seconds after a fixed start.
google::protobuf::Timestamp Clock(uint64_t step) {
  google::protobuf::Timestamp t;
  t.set_seconds(1700000000 + static_cast<int64_t>(step));
  t.set_nanos(123000000);
  return t;
}

double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

class Bench {
 public:
  Bench(const Args& args, RolloutState state)
      : args_(args), state_(std::move(state)), writer_(args.dir + "/new.json") {}

  void Run();

 private:
  // A change to node i, recorded both ways.
  template <typename F>
  void Step(int i, bool durable, F change);
  // A save of the whole state in the old scheme (a rollout-level event).
  void OldSave();
  void NewSnapshot();
  void Print();

  const Args& args_;
  RolloutState state_;
  roced::rollout::RolloutStateWriter writer_;
  uint64_t step_ = 0;
  uint64_t old_size_ = 0;  // the whole state's JSON as it now is
  uint64_t old_bytes_ = 0;
  uint64_t old_saves_ = 0;
  size_t config_bytes_ = 0;
  uint64_t old_real_bytes_ = 0;
  uint64_t new_peak_ = 0;
  std::chrono::steady_clock::duration old_time_{};
  std::chrono::steady_clock::duration new_time_{};
};

template <typename F>
void Bench::Step(int i, bool durable, F change) {
  const size_t before = NodeShare(state_.nodes(i));
  change(state_.mutable_nodes(i));
  *state_.mutable_updated_at() = Clock(++step_);
  old_size_ = old_size_ + NodeShare(state_.nodes(i)) - before;
  OldSave();
  const auto t0 = std::chrono::steady_clock::now();
  if (absl::Status s = writer_.Record(&state_, i, durable); !s.ok()) Usage(std::string(s.message()));
  new_time_ += std::chrono::steady_clock::now() - t0;
  new_peak_ = std::max(new_peak_, writer_.snapshot_bytes() + writer_.journal_bytes());
}

void Bench::OldSave() {
  old_bytes_ += old_size_;
  ++old_saves_;
  if (!args_.old_real) return;
  const std::string path = args_.dir + "/old.json";
  const auto t0 = std::chrono::steady_clock::now();
  RolloutState old = state_;
  old.clear_journal_seq();
  if (absl::Status s = roced::rollout::SaveRolloutState(path, old); !s.ok()) Usage(std::string(s.message()));
  old_time_ += std::chrono::steady_clock::now() - t0;
  old_real_bytes_ += std::filesystem::file_size(path);
}

void Bench::NewSnapshot() {
  const auto t0 = std::chrono::steady_clock::now();
  if (absl::Status s = step_ == 0 ? writer_.Start(&state_) : writer_.Snapshot(&state_); !s.ok()) {
    Usage(std::string(s.message()));
  }
  new_time_ += std::chrono::steady_clock::now() - t0;
  new_peak_ = std::max(new_peak_, writer_.snapshot_bytes() + writer_.journal_bytes());
}

void Bench::Run() {
  NewSnapshot();
  old_size_ = OldJsonSize(state_);
  OldSave();
  const roced::v1::NodeConfig previous = ConfigOf(args_.config_bytes);
  config_bytes_ = CompactSize(previous);
  int next = 0;
  for (int b = 0; b < state_.batch_sizes_size(); ++b) {
    const int first = next;
    next += static_cast<int>(state_.batch_sizes(b));
    *state_.mutable_updated_at() = Clock(++step_);
    OldSave();  // batch_started (the journal records nothing)
    for (int i = first; i < next; ++i) {
      Step(i, true, [&](RolloutNode* n) {
        n->set_state(roced::v1::ROLLOUT_NODE_STATE_APPLYING);
        n->set_previous_generation(41);
        *n->mutable_previous_config() = previous;
        *n->mutable_applied_at() = Clock(step_);
      });
      Step(i, false, [](RolloutNode* n) {
        n->set_state(roced::v1::ROLLOUT_NODE_STATE_WAITING);
        n->set_generation(42);
      });
    }
    for (int i = first; i < next; ++i) {
      Step(i, false, [](RolloutNode* n) {
        auto* g = n->add_gates();
        g->set_gate("converged");
        g->set_state(roced::v1::GATE_STATE_HOLDING);
        g = n->add_gates();
        g->set_gate("no-pfc-storm");
        g->set_state(roced::v1::GATE_STATE_HOLDING);
      });
    }
    for (int i = first; i < next; ++i) {
      Step(i, false, [&](RolloutNode* n) {
        n->set_state(roced::v1::ROLLOUT_NODE_STATE_CONFIRMED);
        *n->mutable_finished_at() = Clock(step_);
      });
    }
  }
  state_.set_phase(roced::v1::ROLLOUT_PHASE_DONE);
  *state_.mutable_updated_at() = Clock(++step_);
  NewSnapshot();
  old_size_ = OldJsonSize(state_);
  OldSave();
  Print();
}

void Bench::Print() {
  absl::StatusOr<RolloutState> loaded = roced::rollout::LoadRolloutState(args_.dir + "/new.json");
  const bool verified = loaded.ok() && google::protobuf::util::MessageDifferencer::Equals(*loaded, state_);
  std::string line = absl::StrCat("nodes=", state_.nodes_size(), " batches=", state_.batch_sizes_size(),
                                  " old_saves=", old_saves_, " config_bytes=", config_bytes_,
                                  " old_bytes=", old_bytes_);
  if (args_.old_real) {
    absl::StrAppend(&line, " old_real_bytes=", old_real_bytes_, " old_seconds=", Seconds(old_time_));
  }
  absl::StrAppend(&line, " new_bytes=", writer_.bytes_written(), " ratio=",
                  static_cast<double>(old_bytes_) / static_cast<double>(writer_.bytes_written()),
                  " new_snapshots=", writer_.snapshots(), " new_peak_bytes=", new_peak_,
                  " new_seconds=", Seconds(new_time_), " state_bytes=", writer_.snapshot_bytes(),
                  " verified=", verified ? 1 : 0);
  std::printf("%s\n", line.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = Parse(argc, argv);
  std::vector<roced::rollout::RolloutTarget> targets;
  for (size_t i = 0; i < args.nodes; ++i) {
    targets.push_back({absl::StrCat("node", i), absl::StrCat("10.", i / 65536, ".", i / 256 % 256, ".", i % 256,
                                                             ":", roced::model::defaults::kGrpcPort)});
  }
  auto max = roced::rollout::ParseMaxUnavailable(args.max_unavailable, args.nodes);
  if (!max.ok()) Usage(std::string(max.status().message()));
  auto plan = roced::rollout::PlanBatches(args.nodes, 1, *max);
  if (!plan.ok()) Usage(std::string(plan.status().message()));
  RolloutState state = roced::rollout::NewRolloutState(targets, *plan);
  state.set_config_path("fleet.yaml");
  *state.mutable_config() = ConfigOf(args.config_bytes);
  state.set_canary(1);
  state.set_max_unavailable(args.max_unavailable);
  state.set_on_failure(roced::v1::ROLLOUT_ON_FAILURE_PAUSE);
  *state.mutable_started_at() = Clock(0);
  *state.mutable_updated_at() = Clock(0);  // from the start: the header's size never changes
  std::filesystem::create_directories(args.dir);
  Bench bench(args, std::move(state));
  bench.Run();
  return 0;
}

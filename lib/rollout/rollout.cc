#include "rollout/rollout.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "mesh/inventory.h"
#include "model/confirm_policy.h"
#include "util/fs.h"
#include "util/ip_subnet.h"

namespace roced::rollout {

using roced::v1::RolloutNode;
using roced::v1::RolloutState;

absl::StatusOr<uint32_t> ParseMaxUnavailable(absl::string_view text, size_t targets) {
  const auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat("--max-unavailable: '", text,
                                                   "' is not N (a number of nodes, 1 or more) or P% "
                                                   "(a percentage of the targets, 1% to 100%)"));
  };
  uint32_t n = 0;
  if (absl::ConsumeSuffix(&text, "%")) {
    if (!absl::SimpleAtoi(text, &n) || n < 1 || n > 100) return bad();
    // Rounded down: "at most P%" must not round up past it, but a rollout
    // always moves at least one node at a time.
    return static_cast<uint32_t>(std::max<uint64_t>(1, uint64_t{n} * targets / 100));
  }
  if (!absl::SimpleAtoi(text, &n) || n < 1) return bad();
  return n;
}

absl::StatusOr<std::vector<uint32_t>> PlanBatches(size_t targets, uint64_t canary, uint32_t max_unavailable) {
  if (targets == 0) return absl::InvalidArgumentError("no targets to roll out to");
  if (canary < 1 || canary > targets) {
    return absl::InvalidArgumentError(
        absl::StrCat("--canary: ", canary, " is not in 1-", targets, " (the number of targets)"));
  }
  if (canary > max_unavailable) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--canary: ", canary, " is larger than --max-unavailable (", max_unavailable,
        " node(s)): the canary batch would change more nodes at once than allowed; allowed 1-", max_unavailable));
  }
  std::vector<uint32_t> batches = {static_cast<uint32_t>(canary)};
  size_t left = targets - canary;
  uint64_t size = canary;
  while (left > 0) {
    // Doubling: each batch that confirmed is evidence for one twice its
    // size, up to what may be unavailable at once.
    size = std::min<uint64_t>(size * 2, max_unavailable);
    const uint32_t batch = static_cast<uint32_t>(std::min<uint64_t>(size, left));
    batches.push_back(batch);
    left -= batch;
  }
  return batches;
}

absl::StatusOr<roced::v1::RolloutOnFailure> ParseOnFailure(absl::string_view text) {
  if (text == "pause") return roced::v1::ROLLOUT_ON_FAILURE_PAUSE;
  if (text == "rollback") return roced::v1::ROLLOUT_ON_FAILURE_ROLLBACK;
  return absl::InvalidArgumentError(absl::StrCat("--on-failure: '", text, "' is not one of pause, rollback"));
}

namespace {

// The words of a line, its comment and a CR left out.
std::vector<absl::string_view> Words(absl::string_view line) {
  if (size_t hash = line.find('#'); hash != absl::string_view::npos) line = line.substr(0, hash);
  return absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
}

}  // namespace

absl::StatusOr<std::vector<RolloutTarget>> ParseTargets(absl::string_view text) {
  std::vector<RolloutTarget> out;
  bool inventory = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) inventory |= Words(line).size() > 1;
  if (inventory) {
    // The same file `rocectl mesh --targets` reads, read the same way.
    auto members = mesh::ParseInventory(std::string_view(text.data(), text.size()));
    if (!members.ok()) return members.status();
    for (const auto& m : *members) out.push_back({m.name, m.address});
  } else {
    size_t number = 0;
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      ++number;
      const std::vector<absl::string_view> words = Words(line);
      if (words.empty()) continue;
      if (!util::IsHostPort(std::string_view(words[0].data(), words[0].size()))) {
        return absl::InvalidArgumentError(absl::StrCat("line ", number, ": '", words[0],
                                                       "' is not host:port with a port in [1, 65535] "
                                                       "(IPv6: [host]:port)"));
      }
      out.push_back({std::string(words[0]), std::string(words[0])});
    }
  }
  if (out.size() > kMaxRolloutTargets) {
    return absl::InvalidArgumentError(absl::StrCat(out.size(), " targets; at most ", kMaxRolloutTargets));
  }
  std::set<std::string> seen;
  for (const auto& t : out) {
    if (!seen.insert(t.address).second) {
      return absl::InvalidArgumentError(absl::StrCat("'", t.address, "' is listed twice"));
    }
  }
  return out;
}

Classified ClassifyOutcome(const roced::v1::ConfigStatus& config, uint64_t generation) {
  Classified c;
  // A rollback is a later generation too: asked first.
  if (config.has_last_rollback() && config.last_rollback().generation() == generation) {
    c.outcome = Outcome::kRolledBack;
    c.reason = config.last_rollback().reason();
    c.detail = absl::StrCat(config.last_rollback().detail(), config.last_rollback().detail().empty() ? "" : " ",
                            "(returned to generation ", config.last_rollback().returned_to(), ")");
  } else if (config.generation() == generation) {
    c.outcome = config.has_confirm_deadline() ? Outcome::kWaiting : Outcome::kConfirmed;
  } else if (config.generation() > generation) {
    c.outcome = Outcome::kSuperseded;
    c.reason = "superseded";
    c.detail = absl::StrCat("generation ", generation, " was replaced by ", config.generation(),
                            " without a rollback of it (another writer?)");
  } else {
    c.outcome = Outcome::kBehind;
    c.reason = "generation_lost";
    c.detail = absl::StrCat("the node is at generation ", config.generation(), ", below ", generation,
                            " (its state directory lost?)");
  }
  return c;
}

std::string GateSummary(const google::protobuf::RepeatedPtrField<roced::v1::GateStatus>& gates) {
  std::vector<std::string> parts;
  for (const auto& g : gates) {
    const char* state = g.state() == roced::v1::GATE_STATE_HOLDING   ? "holding"
                        : g.state() == roced::v1::GATE_STATE_FAILED  ? "FAILED"
                        : g.state() == roced::v1::GATE_STATE_WAITING ? "waiting"
                                                                     : "?";
    parts.push_back(absl::StrCat(g.gate(), " ", state));
  }
  return absl::StrJoin(parts, ", ");
}

namespace {

ResumeDecision Decide(uint64_t from, const roced::v1::NodeConfig& sent, const roced::v1::ConfigStatus& now,
                      bool rolled_back_counts) {
  ResumeDecision d;
  if (now.generation() == from) return d;  // kSendAgain
  const uint64_t landed = from + 1;
  const bool same = google::protobuf::util::MessageDifferencer::Equals(now.desired(), sent);
  // Landed and since rolled back by the agent: the desired config is the
  // previous one again, but the rollback names the generation it made.
  const bool returned = rolled_back_counts && now.has_last_rollback() && now.last_rollback().generation() == landed;
  if ((now.generation() == landed && same) || returned) {
    d.what = Resumed::kLanded;
    d.generation = landed;
    return d;
  }
  d.what = Resumed::kChangedElsewhere;
  d.detail = absl::StrCat("the node moved from generation ", from, " to ", now.generation(),
                          same ? "" : " with a desired config that is not the one sent", ": left as it is");
  return d;
}

}  // namespace

ResumeDecision DecideApplying(const RolloutNode& node, const roced::v1::NodeConfig& config,
                              const roced::v1::ConfigStatus& now) {
  return Decide(node.previous_generation(), config, now, true);
}

ResumeDecision DecideReverting(const RolloutNode& node, const roced::v1::ConfigStatus& now) {
  return Decide(node.revert_from(), node.previous_config(), now, false);
}

RolloutState NewRolloutState(const std::vector<RolloutTarget>& targets, const std::vector<uint32_t>& batch_sizes) {
  RolloutState state;
  size_t next = 0;
  for (size_t b = 0; b < batch_sizes.size(); ++b) {
    state.add_batch_sizes(batch_sizes[b]);
    for (uint32_t i = 0; i < batch_sizes[b] && next < targets.size(); ++i, ++next) {
      RolloutNode* node = state.add_nodes();
      node->set_name(targets[next].name);
      node->set_address(targets[next].address);
      node->set_batch(static_cast<uint32_t>(b));
      node->set_state(roced::v1::ROLLOUT_NODE_STATE_PENDING);
    }
  }
  state.set_phase(roced::v1::ROLLOUT_PHASE_RUNNING);
  return state;
}

void AssignProbePeers(roced::v1::RolloutState* state, uint32_t per_node) {
  per_node = std::min<uint32_t>(per_node, static_cast<uint32_t>(model::kMaxConfirmProbePeers));
  const size_t n = static_cast<size_t>(state->nodes_size());
  // Node positions by batch, and how many nodes come before each batch.
  std::map<uint32_t, std::vector<size_t>> by_batch;
  for (size_t i = 0; i < n; ++i) by_batch[state->nodes(static_cast<int>(i)).batch()].push_back(i);
  std::vector<size_t> order;  // every position, batch by batch
  std::map<uint32_t, size_t> first;
  for (const auto& [batch, members] : by_batch) {
    first[batch] = order.size();
    order.insert(order.end(), members.begin(), members.end());
  }
  for (size_t i = 0; i < n; ++i) {
    roced::v1::RolloutNode* node = state->mutable_nodes(static_cast<int>(i));
    node->clear_probe_peers();
    const size_t begin = first[node->batch()];
    const size_t end = begin + by_batch[node->batch()].size();
    std::vector<size_t> picked;
    auto pick = [&](size_t from, size_t to, size_t offset) {  // one of order[from, to), spread by i
      for (size_t k = 0; k < to - from && picked.size() < per_node; ++k) {
        const size_t candidate = order[from + (i + offset + k) % (to - from)];
        if (candidate == i || std::find(picked.begin(), picked.end(), candidate) != picked.end()) continue;
        picked.push_back(candidate);
        return;
      }
    };
    if (begin > 0) pick(0, begin, 0);     // an earlier batch: on the new config
    if (end < n) pick(end, n, 0);          // a later batch: still on the old one
    for (size_t k = 0; picked.size() < per_node && k < end - begin; ++k) pick(begin, end, 1 + k);
    for (size_t k = 0; picked.size() < per_node && k < n; ++k) pick(0, n, 1 + k);
    for (size_t p : picked) node->add_probe_peers(state->nodes(static_cast<int>(p)).address());
  }
}

bool NodeDone(roced::v1::RolloutNodeState s) {
  return s == roced::v1::ROLLOUT_NODE_STATE_CONFIRMED || s == roced::v1::ROLLOUT_NODE_STATE_ROLLED_BACK ||
         s == roced::v1::ROLLOUT_NODE_STATE_FAILED || s == roced::v1::ROLLOUT_NODE_STATE_REVERTED ||
         s == roced::v1::ROLLOUT_NODE_STATE_SKIPPED;
}

bool NodeFailed(roced::v1::RolloutNodeState s) {
  return s == roced::v1::ROLLOUT_NODE_STATE_ROLLED_BACK || s == roced::v1::ROLLOUT_NODE_STATE_FAILED;
}

bool Unfinished(const RolloutState& state) {
  return state.phase() == roced::v1::ROLLOUT_PHASE_RUNNING || state.phase() == roced::v1::ROLLOUT_PHASE_HALTED ||
         state.phase() == roced::v1::ROLLOUT_PHASE_REVERTING;
}

int ResetFailedForRetry(RolloutState* state) {
  if (state->phase() != roced::v1::ROLLOUT_PHASE_HALTED) return 0;
  int reset = 0;
  for (RolloutNode& node : *state->mutable_nodes()) {
    if (!NodeFailed(node.state())) continue;
    // Read afresh at the retry: what the node has now is its previous.
    const RolloutNode kept = node;
    node.Clear();
    node.set_address(kept.address());
    node.set_name(kept.name());
    node.set_batch(kept.batch());
    node.set_state(roced::v1::ROLLOUT_NODE_STATE_PENDING);
    ++reset;
  }
  state->set_phase(roced::v1::ROLLOUT_PHASE_RUNNING);
  state->clear_halted_by();
  state->clear_halt_reason();
  return reset;
}

namespace {

std::string EnumSuffix(const std::string& full, absl::string_view prefix) {
  absl::string_view name = full;
  absl::ConsumePrefix(&name, prefix);
  return absl::AsciiStrToLower(name);
}

}  // namespace

std::string NodeStateName(roced::v1::RolloutNodeState state) {
  return EnumSuffix(roced::v1::RolloutNodeState_Name(state), "ROLLOUT_NODE_STATE_");
}

std::string PhaseName(roced::v1::RolloutPhase phase) {
  return EnumSuffix(roced::v1::RolloutPhase_Name(phase), "ROLLOUT_PHASE_");
}

}  // namespace roced::rollout

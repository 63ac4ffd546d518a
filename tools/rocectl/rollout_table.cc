#include "tools/rocectl/rollout_table.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "model/confirm_policy.h"
#include "rollout/rollout.h"

namespace roced::ctl {

using roced::rollout::GateSummary;
using roced::rollout::NodeStateName;
using roced::rollout::PhaseName;
using roced::v1::RolloutNode;
using roced::v1::RolloutState;

std::string DefaultRolloutStatePath() {
  if (const char* x = std::getenv("XDG_STATE_HOME"); x != nullptr && *x == '/') {
    return absl::StrCat(x, "/rocectl/rollout.json");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') {
    return absl::StrCat(home, "/.local/state/rocectl/rollout.json");
  }
  return "rocectl-rollout.json";
}

namespace {

std::string GenerationCell(const RolloutNode& n) {
  // Nothing recorded before the apply: it never reached the node.
  if (!n.has_applied_at()) return "-";
  std::string cell = absl::StrCat(n.previous_generation(), " -> ");
  absl::StrAppend(&cell, n.generation() == 0 ? "?" : absl::StrCat(n.generation()));
  if (n.reverted_generation() != 0) absl::StrAppend(&cell, " -> ", n.reverted_generation());
  return cell;
}

std::string LastCell(const RolloutNode& n) {
  if (n.state() == roced::v1::ROLLOUT_NODE_STATE_WAITING) return GateSummary(n.gates());
  if (!n.reason().empty()) return absl::StrCat(n.reason(), n.detail().empty() ? "" : ": ", n.detail());
  return n.detail();
}

std::string Pad(absl::string_view s, size_t width) {
  std::string out(s);
  if (out.size() < width) out.resize(width, ' ');
  return out;
}

}  // namespace

std::string RolloutTable(const RolloutState& state) {
  std::map<roced::v1::RolloutNodeState, int> counts;
  size_t name_width = 4;
  for (const auto& n : state.nodes()) {
    ++counts[n.state()];
    name_width = std::max(name_width, n.name().size());
  }
  std::vector<std::string> tally;
  for (const auto& [s, count] : counts) tally.push_back(absl::StrCat(count, " ", NodeStateName(s)));
  std::string out = absl::StrCat("Rollout of ", state.config_path(), ": ", PhaseName(state.phase()), " (",
                                 state.nodes_size(), " node(s) in ", state.batch_sizes_size(), " batch(es): ",
                                 absl::StrJoin(tally, ", "), ")\n");
  absl::StrAppend(&out, "Confirm policy: ", model::DescribeConfirmPolicy(state.confirm_policy()), "\n");
  if (!state.halted_by().empty()) {
    absl::StrAppend(&out, "Halted by ", state.halted_by(), ": ", state.halt_reason(), "\n");
  }
  absl::StrAppend(&out, Pad("NODE", name_width), "  BATCH  ", Pad("STATE", 11), "  ", Pad("GENERATION", 14),
                  "  GATES / REASON\n");
  for (const auto& n : state.nodes()) {
    std::string row = absl::StrCat(Pad(n.name(), name_width), "  ", Pad(absl::StrCat(n.batch()), 5), "  ",
                                   Pad(NodeStateName(n.state()), 11), "  ", Pad(GenerationCell(n), 14), "  ",
                                   LastCell(n));
    absl::StripTrailingAsciiWhitespace(&row);
    absl::StrAppend(&out, row, "\n");
  }
  return out;
}

}  // namespace roced::ctl

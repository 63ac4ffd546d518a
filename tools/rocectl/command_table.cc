// The command table and the help page rendered from it.
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"
#include "model/defaults.h"
#include "util/args.h"
#include "tools/rocectl/commands.h"

namespace roced::ctl {

namespace {

// The longest usage and summaries, kept out of the table so that it reads as one.
constexpr char kRolloutUsage[] =
    "rollout -f FILE (--targets FILE | --dns NAME[:PORT]) [--canary N] [--max-unavailable N|P%] "
    "[--on-failure pause|rollback] [--confirm-policy SPEC|FILE] [--probe-peers N] [--state FILE]\n"
    "    rollout status|resume [--state FILE]";

constexpr char kRollbackHelp[] =
    "Return from a provisional config now (applied with --confirm-timeout or\n"
    "--confirm-policy), as its deadline or a failed gate would: the agent\n"
    "accepts its previous config again and writes back what it overwrote.\n"
    "GENERATION (0: whichever is pending) must be the pending one.";

constexpr char kStatusSummary[] =
    "The node as the agent sees it: RDMA devices, ports, netdevs, MTUs,\n"
    "GID table with RoCE v1/v2 types, PCIe link (degraded links flagged),\n"
    "switches heard over LLDP, the QoS of every RoCE port as read from the\n"
    "node whether or not the config manages it (DCBX, trust, DSCP map by\n"
    "priority, PFC, ETS, buffers, PFC storm, ECN, CNP, RoCE mode and ToS;\n"
    "* marks what the config manages), the accepted config (desired vs\n"
    "observed per field) and agent health. -o json|yaml: the same data\n"
    "(NodeState; interfaceQos per port, its `managed` config paths).";

}  // namespace

// Each summary is what a first reader needs; the whole story of each
// command is in docs/api.md, which the help pages point to.
const std::vector<Command>& Commands() {
  static const std::vector<Command> kCommands = {
      {"status", "status", kStatusSummary, BindStatus, true, "the node: devices, ports, GIDs, QoS of each port, config",
       "--target 10.0.0.11:7471 -o json status"},
      {"get", "get config", "The config in force as NodeConfig YAML that `rocectl apply -f` takes back.", BindGet,
       true, "the config in force, as YAML that apply takes back", "get config > node.yaml"},
      {"apply",
       "apply -f FILE [--dry-run] [--confirm-timeout DUR | --confirm-policy SPEC|FILE] [--expected-generation N]",
       "Send a NodeConfig to the agent. Prints the plan as a diff (current -,\n"
       "wanted +, disruptive steps marked) and each step's outcome; a step\n"
       "that fails rolls the whole apply back. With --confirm-policy the\n"
       "agent confirms the change itself once every gate held for the window\n"
       "and rolls back as soon as one fails.",
       BindApply, true, "send a YAML config; plan, apply, verify, roll back",
       "apply -f deploy/examples/lossless-prio3.yaml --dry-run"},
      {"confirm", "confirm [GENERATION]",
       "Make a provisional config (applied with --confirm-timeout) permanent.", BindConfirm,
       true, "make a provisional config permanent", "confirm 7"},
      {"rollback", "rollback [GENERATION]", kRollbackHelp, BindRollback, true,
       "return from a provisional config now", "rollback"},
      {"rollout", kRolloutUsage,
       "One config across the fleet, canary first, batches doubling; each node\n"
       "confirms or rolls back by itself; a failure halts. 0: all confirmed.",
       BindRollout, true, "apply one config to a fleet, batch by batch",
       "rollout -f new.yaml --targets fleet.txt --canary 1"},
      {"counters",
       "counters [--rate] [--watch] [--all] [--device DEV] [--netdev NETDEV] [--interval DUR]",
       "RDMA counters (sysfs counters/ and hw_counters/, stable names across\n"
       "drivers) and the netdevs' PFC pause and discard statistics; --rate\n"
       "shows per-second rates of what moved, --watch keeps redrawing.",
       BindCounters, true, "RDMA, PFC and discard counters, with rates", "counters --rate --netdev eth0"},
      {"probe", "probe PEER [--kind latency|bandwidth] [--size B] [--iterations N] [--duration D]",
       "Run an RDMA probe from the agent to PEER (a probes.peers name or the\n"
       "peer agent's HOST:PORT) now; prints it as ib_write_lat / ib_write_bw do.",
       BindProbe, true, "an RDMA WRITE latency or bandwidth probe to a peer now",
       "probe node2 --kind bandwidth"},
      {"probes", "probes [PEER] [--kind K] [--limit N]",
       "The agent's recent probe results, newest first.", BindProbes, true,
       "recent probe results, newest first", "probes node2 --kind latency --limit 5"},
      {"diagnose", "diagnose [--checks NAMES]",
       "Check the node for the misalignments that break RoCE (PFC and DSCP on\n"
       "different priorities, ECN off, RoCE v1, MTU, PCIe width, LLDP against\n"
       "the host, NUMA, ARP, clock, ...). Each finding says why and how to fix\n"
       "it. Exits 1 when any finding is an error. The checks: docs/api.md.",
       BindDiagnose, true, "findings that break RoCE, each with why and fix",
       "diagnose --checks pfc_dscp,ecn"},
      {"mesh", "mesh [--targets FILE | --dns NAME:PORT | --prometheus URL [--window DUR]] [--baseline-loss P]",
       "The fleet mesh: the agents' UD probes of each other as a ToR-by-ToR\n"
       "matrix of loss and worst p99, and the suspects localized from it: rnic,\n"
       "host (its agent says busy: CPU starved, stalled, just started),\n"
       "tor_pair, tor, tor_uplinks, fabric, fleet; of loss or of latency (over\n"
       "4x the path's learned round trip), maybe of one size or DSCP. Each is\n"
       "judged against its peers now times its own history; no loss rate is\n"
       "configured. Exits 1 when a suspect is named, 2 on a bad inventory.",
       BindMesh, true, "the fleet mesh's loss and latency, localized",
       "mesh --targets fleet.txt"},
      {"events", "events [--for DUR] [--count N] [--initial]",
       "Follow the agent's changes as they happen (WatchState): devices added\n"
       "or removed, configs accepted or rejected, drift found and corrected,\n"
       "reconcile passes, PFC storms. One line each; -o json: one JSON\n"
       "object per line. Exits 0 when --for or --count ends it.",
       BindEvents, true, "follow the agent's changes (WatchState)", "events --for 60s -o json"},
      {"ready", "ready",
       "Whether the node is ready, by the rule the agent's /readyz answers\n"
       "by: devices discovered, state directory usable, the accepted config\n"
       "in force (enforce mode), no provisional config awaiting confirm.\n"
       "Each check with why. Exits 0 when ready, 1 when not or when the\n"
       "agent does not answer: an exec readiness probe.",
       BindReady, true, "is the node ready? each check; exit 0 or 1", "ready -o json"},
      {"version", "version", "rocectl's version and, when reachable, the agent's.", BindVersion,
       true, "rocectl's and the agent's versions", "version"},
      {"help", "help [options]",
       "The command list, or with `options` every global option in full.", BindHelp, false,
       "this list; `help options`: the global options in full", "help options"},
  };
  return kCommands;
}

const Command* FindCommand(absl::string_view name) {
  for (const Command& c : Commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

namespace {

constexpr char kSeeAlso[] = "Global options: rocectl help options. Every command: docs/api.md.\n";

// The first clause of a flag's help: up to its first ". " or "; " outside
// parentheses, without the "COMMAND: " it starts with ("apply: the
// NodeConfig YAML to apply ('-' reads stdin)." -> "the NodeConfig YAML to
// apply ('-' reads stdin)").
std::string FirstClause(std::string text) {
  if (const size_t colon = text.find(": "); colon != std::string::npos && colon < 16 &&
                                            text.find(' ') > colon) {
    text = text.substr(colon + 2);
  }
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '(') ++depth;
    if (text[i] == ')') --depth;
    const bool end = i + 1 == text.size() || text[i + 1] == ' ';
    if (depth == 0 && end && (text[i] == '.' || text[i] == ';')) return text.substr(0, i);
  }
  return text;
}

// The parser's OPTIONS block ("  -f, --file FILE" then the help indented on
// the lines below) as one entry a flag: its synopsis, and the first
// clause of its help beside it from column 30, wrapped at 80.
std::string CompactOptions(const std::string& block) {
  constexpr size_t kColumn = 30;
  std::vector<std::pair<std::string, std::string>> flags;
  for (absl::string_view line : absl::StrSplit(block, '\n')) {
    if (absl::StartsWith(line, "  -")) {
      flags.emplace_back(std::string(line), "");
    } else if (!flags.empty() && !absl::StripAsciiWhitespace(line).empty()) {
      std::string& help = flags.back().second;
      absl::StrAppend(&help, help.empty() ? "" : " ", absl::StripAsciiWhitespace(line));
    }
  }
  std::string out;
  for (const auto& [synopsis, help] : flags) {
    const std::string text = FirstClause(help);
    if (text.empty()) {
      absl::StrAppend(&out, synopsis, "\n");
      continue;
    }
    std::string head = synopsis;
    if (head.size() + 1 > kColumn) {
      absl::StrAppend(&out, head, "\n");
      head.clear();
    }
    head.resize(kColumn, ' ');
    const std::string wrapped = util::WrapText(text, kHelpColumns, std::string(kColumn, ' '));
    absl::StrAppend(&out, head, absl::StripLeadingAsciiWhitespace(wrapped));
    if (!absl::EndsWith(out, "\n")) out += "\n";
  }
  return out;
}

}  // namespace

std::string TopLevelHelp() {
  constexpr size_t kColumn = 13;
  std::string commands;
  for (const Command& c : Commands()) {
    std::string name = absl::StrCat("  ", c.name);
    name.resize(kColumn, ' ');
    absl::StrAppend(&commands, name, c.brief, "\n");
  }
  return absl::StrCat(
      "Usage: rocectl [--target HOST:PORT | --socket PATH] [-o table|json|yaml] COMMAND\n"
      "rocectl controls and inspects the roced RoCE node agent.\n"
      "\n"
      "Commands (each with --help; all options: rocectl help options):\n",
      commands,
      "Options: --target HOST:PORT (else the unix --socket PATH), with mutual TLS\n"
      "  --ca, --cert, --key FILE ($ROCECTL_CA, ...), --server-name NAME, or\n"
      "  --insecure; -o table|json|yaml; --timeout DUR; -h, --help.\n"
      "Exit status: 0 ok, 1 findings (or a diff), 2 usage, 3 failed or unreachable.\n"
      "Example: rocectl --target 10.0.0.11:", roced::model::defaults::kGrpcPort,
      " -o json diagnose   Docs: docs/api.md\n");
}

std::string OptionsHelp(const std::string& options) {
  return absl::StrCat("Usage: rocectl [OPTIONS] COMMAND\n\nOPTIONS\n", options);
}

std::string CommandHelp(const Command& command, const std::string& flags) {
  // Each line of the usage wrapped at the screen's width, the first one
  // after "Usage: rocectl [OPTIONS] ", the others indented.
  std::string usage;
  for (absl::string_view line : absl::StrSplit(absl::StrCat("Usage: rocectl [OPTIONS] ", command.usage), '\n')) {
    absl::StrAppend(&usage, util::WrapText(std::string(absl::StripAsciiWhitespace(line)), kHelpColumns, "    "));
  }
  return absl::StrCat(absl::StripLeadingAsciiWhitespace(usage), "\n", command.summary, "\n",
                      flags.empty() ? "" : absl::StrCat("\nCOMMAND OPTIONS\n", CompactOptions(flags)), "\n",
                      "Example: rocectl ", command.example, "\n", kSeeAlso);
}

// `rocectl help` and `rocectl --help`: the command list; `rocectl help
// options`: the global flags, which are all `parser` holds when help runs.
CommandRun BindHelp(util::ArgParser* parser) {
  return [parser](const CommandContext&, const std::vector<std::string>& args) {
    if (!args.empty() && args[0] == "options") {
      std::cout << OptionsHelp(parser->Help());
    } else {
      std::cout << TopLevelHelp();
    }
    return kExitOk;
  };
}

}  // namespace roced::ctl

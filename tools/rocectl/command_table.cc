// The command table and the help page rendered from it.
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "model/defaults.h"
#include "tools/rocectl/commands.h"

namespace roced::ctl {

namespace {

// The longest entries, kept out of the table so that it reads as one.
constexpr char kRolloutUsage[] =
    "rollout -f FILE (--targets FILE | --dns NAME[:PORT]) [--canary N] [--max-unavailable N|P%] "
    "[--on-failure pause|rollback] [--confirm-policy SPEC|FILE] [--state FILE]\n"
    "    rollout status|resume [--state FILE]";
constexpr char kRolloutSummary[] =
    "Apply one config across the fleet in batches: a canary batch of\n"
    "--canary nodes (1), then batches doubling up to --max-unavailable\n"
    "(1; N nodes or P% of the targets). Each node gets the config with\n"
    "--expected-generation its current one and a confirm policy (default\n"
    "window=60s,converged,no-pfc-storm), and the agent confirms or rolls\n"
    "back by itself; a batch waits for every node's outcome (giving up\n"
    "60 s past the window). A failure (rolled back, apply failed or\n"
    "refused, unreachable, no outcome) halts the rollout: the nodes not\n"
    "yet done are untouched, and with --on-failure rollback the nodes\n"
    "already confirmed return to their previous config. Progress: a live\n"
    "table on a terminal, a line per event otherwise, -o json one JSON\n"
    "object per event and a summary. Every step is kept in --state FILE\n"
    "(a snapshot, and FILE.journal a line per step) first: `rollout\n"
    "status` shows it and `rollout resume` finishes a rollout whose\n"
    "rocectl died (or retries a halted one's failed nodes). Exits 0 when\n"
    "every node confirmed, 1 when halted or rolled back.";

}  // namespace

const std::vector<Command>& Commands() {
  static const std::vector<Command> kCommands = {
      {"status", "status",
       "The node as the agent sees it: RDMA devices, ports, netdevs, MTUs,\n"
       "GID table with RoCE v1/v2 types, PCIe link (degraded links flagged),\n"
       "accepted config and agent health.",
       BindStatus, true},
      {"apply",
       "apply -f FILE [--dry-run] [--confirm-timeout DUR | --confirm-policy SPEC|FILE] [--expected-generation N]",
       "Send a NodeConfig to the agent. Prints the plan as a diff (current -,\n"
       "wanted +, disruptive steps marked) and each step's outcome; a step\n"
       "that fails rolls the whole apply back. --dry-run changes nothing.\n"
       "--confirm-policy makes the change provisional and lets the agent\n"
       "judge it: it confirms by itself once every gate held for the window\n"
       "and rolls back by itself as soon as one fails.",
       BindApply, true},
      {"confirm", "confirm [GENERATION]",
       "Make a provisional config (applied with --confirm-timeout) permanent.", BindConfirm,
       true},
      {"rollout", kRolloutUsage, kRolloutSummary, BindRollout, true},
      {"counters",
       "counters [--rate] [--watch] [--all] [--device DEV] [--netdev NETDEV] [--interval DUR]",
       "RDMA counters (sysfs counters/ and hw_counters/, stable names across\n"
       "drivers) and the netdevs' PFC pause and discard statistics; --rate\n"
       "shows per-second rates of what moved, --watch keeps redrawing.",
       BindCounters, true},
      {"probe", "probe PEER [--kind latency|bandwidth] [--size B] [--iterations N] [--duration D]",
       "Run an RDMA probe from the agent to PEER (a probes.peers name or the\n"
       "peer agent's HOST:PORT) now; prints it as ib_write_lat / ib_write_bw do.",
       BindProbe, true},
      {"probes", "probes [PEER] [--kind K] [--limit N]",
       "The agent's recent probe results, newest first.", BindProbes, true},
      {"diagnose", "diagnose [--checks NAMES]",
       "Check the node for the misalignments that break RoCE: PFC on one\n"
       "priority and RoCE's DSCP on another, ECN off on the lossless priority,\n"
       "rdma_cm left at RoCE v1, no RoCE v2 GID with an IP, RoCE MTU below\n"
       "4096, a NIC in a narrow PCIe slot, no hugepages, a memlock limit,\n"
       "failing probes, config not in force, PFC pauses without ECN, link\n"
       "flaps, probes worse since a driver/firmware change, the switch's\n"
       "LLDP disagreeing with the host, hugepages/IRQs/CPUs off the NIC's\n"
       "NUMA node, unresolved peer neighbours, ports sharing a subnet\n"
       "without ARP sysctls, an unsynchronised clock. Each finding says why\n"
       "and how to fix it. Exits 1 when any finding is an error.",
       BindDiagnose, true},
      {"mesh", "mesh [--targets FILE | --dns NAME:PORT | --prometheus URL [--window DUR]] [--baseline-loss P]",
       "The fleet mesh: what the agents' UD probes of each other saw over\n"
       "their window (ListMeshResults), as a ToR-by-ToR matrix of loss and\n"
       "worst p99, and the suspects localized from it: a host (its RNIC), a\n"
       "ToR pair, a ToR, a ToR's uplinks, the fabric or the whole fleet, each\n"
       "possibly only for one probe size or DSCP, with the evidence and a\n"
       "confidence. Without --targets, the --target agent's own view (and its\n"
       "series); with --targets FILE (an inventory: NAME ADDRESS [TOR [POD]]\n"
       "a line), every listed agent is asked (32 at a time, same credentials)\n"
       "and the localization runs over all their windows; --dns NAME:PORT\n"
       "asks every address the name resolves to; --prometheus URL reads\n"
       "the same windows from a Prometheus server scraping the agents (its\n"
       "series name the far ToR across ToRs, one member standing for its\n"
       "hosts), for fleets too large to ask each agent. Exits 1 when a\n"
       "suspect is named or no agent answered, 2 on a bad inventory.",
       BindMesh, true},
      {"events", "events [--for DUR] [--count N] [--initial]",
       "Follow the agent's changes as they happen (WatchState): devices added\n"
       "or removed, configs accepted or rejected, drift found and corrected,\n"
       "reconcile passes, PFC storms. One line each; -o json: one JSON\n"
       "object per line. Exits 0 when --for or --count ends it.",
       BindEvents, true},
      {"ready", "ready",
       "Whether the node is ready, by the rule the agent's /readyz answers\n"
       "by: devices discovered, state directory usable, the accepted config\n"
       "in force (enforce mode), no provisional config awaiting confirm.\n"
       "Each check with why. Exits 0 when ready, 1 when not or when the\n"
       "agent does not answer: an exec readiness probe.",
       BindReady, true},
      {"version", "version", "rocectl's version and, when reachable, the agent's.", BindVersion,
       true},
      {"help", "help", "This text.", BindHelp, false},
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

// "    USAGE  SUMMARY" with the summary at column 15, or on the lines below
// when the usage is too long to leave room for it.
std::string CommandsSection() {
  constexpr size_t kColumn = 15;
  const std::string indent(kColumn, ' ');
  std::string out;
  for (const Command& c : Commands()) {
    std::string head = absl::StrCat("    ", c.usage);
    bool first = true;
    if (head.size() + 1 > kColumn) {
      absl::StrAppend(&out, head, "\n");
      first = false;
    }
    for (absl::string_view line : absl::StrSplit(c.summary, '\n')) {
      if (first) {
        head.resize(kColumn, ' ');
        absl::StrAppend(&out, head, line, "\n");
        first = false;
      } else {
        absl::StrAppend(&out, indent, line, "\n");
      }
    }
  }
  return out;
}

}  // namespace

std::string TopLevelHelp(const std::string& options) {
  return absl::StrCat(
      "NAME\n"
      "    rocectl - control and inspect the roced RoCE node agent\n"
      "\n"
      "SYNOPSIS\n"
      "    rocectl [--target HOST:PORT | --socket PATH] [-o table|json|yaml] COMMAND\n"
      "\n"
      "COMMANDS\n",
      CommandsSection(),
      "\n"
      "OPTIONS\n",
      options,
      "\n"
      "EXIT STATUS\n"
      "    0  success\n"
      "    1  the command failed; a one-line reason is printed (agent not reachable,\n"
      "       permission denied on the socket, deadline exceeded, ...)\n"
      "    2  usage error (unknown command or option, bad value)\n"
      "\n"
      "EXAMPLES\n"
      "    rocectl status\n"
      "    rocectl --target 10.0.0.11:", roced::model::defaults::kGrpcPort, " -o json status | jq '.devices[].name'\n"
      "    rocectl diagnose --checks pfc_dscp,ecn\n"
      "    rocectl --ca ca.pem --cert me.pem --key me.key rollout -f lossless.yaml \\\n"
      "        --targets fleet.txt --canary 1 --max-unavailable 10% --on-failure rollback\n");
}

// `rocectl help` and `rocectl --help`: the page with the global flags'
// OPTIONS, which are all `parser` holds when help runs.
CommandRun BindHelp(util::ArgParser* parser) {
  return [parser](const CommandContext&, const std::vector<std::string>&) {
    std::cout << TopLevelHelp(parser->Help());
    return kExitOk;
  };
}

}  // namespace roced::ctl

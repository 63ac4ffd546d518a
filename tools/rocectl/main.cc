// rocectl: the command line for on-call engineers. See `rocectl --help`.
#include <grpcpp/grpcpp.h>

#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "roced/v1/agent.grpc.pb.h"
#include "roced/version.h"
#include "tools/rocectl/commands.h"
#include "tools/rocectl/counters_cmd.h"
#include "tools/rocectl/diagnose_cmd.h"
#include "tools/rocectl/format.h"
#include "tools/rocectl/probe_cmd.h"
#include "util/args.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

struct Globals {
  std::string target;
  std::string socket = "/run/roced/roced.sock";
  std::string output = "table";
  absl::Duration timeout = absl::Seconds(10);
  bool help = false;
};

void Register(Globals* g, roced::util::ArgParser* p) {
  p->AddString("target", &g->target, "HOST:PORT",
               "Talk to the agent's gRPC TCP endpoint (e.g. 10.0.0.11:7471) instead of the "
               "local unix socket.");
  p->AddString("socket", &g->socket, "PATH", "The agent's local unix socket.");
  p->AddString("output", &g->output, "FORMAT",
               "Output format: table (for people), json (the proto3 JSON mapping, for "
               "scripts), yaml.",
               'o');
  p->AddDuration("timeout", &g->timeout, "DUR", "Deadline for each call to the agent.");
  p->AddBool("help", &g->help, "Print this help, then exit.", 'h');
}

std::string Help(const roced::util::ArgParser& p) {
  return absl::StrCat(
      "NAME\n"
      "    rocectl - control and inspect the roced RoCE node agent\n"
      "\n"
      "SYNOPSIS\n"
      "    rocectl [--target HOST:PORT | --socket PATH] [-o table|json|yaml] COMMAND\n"
      "\n"
      "COMMANDS\n"
      "    status     The node as the agent sees it: RDMA devices, ports, netdevs, MTUs,\n"
      "               GID table with RoCE v1/v2 types, PCIe link (degraded links flagged),\n"
      "               accepted config and agent health.\n"
      "    apply -f FILE [--dry-run] [--confirm-timeout DUR] [--expected-generation N]\n"
      "               Send a NodeConfig to the agent. Prints the plan as a diff (current -,\n"
      "               wanted +, disruptive steps marked) and each step's outcome; a step\n"
      "               that fails rolls the whole apply back. --dry-run changes nothing.\n"
      "    confirm [GENERATION]\n"
      "               Make a provisional config (applied with --confirm-timeout) permanent.\n"
      "    counters [--rate] [--watch] [--all] [--device DEV] [--netdev NETDEV] [--interval DUR]\n"
      "               RDMA counters (sysfs counters/ and hw_counters/, stable names across\n"
      "               drivers) and the netdevs' PFC pause and discard statistics; --rate\n"
      "               shows per-second rates of what moved, --watch keeps redrawing.\n"
      "    probe PEER [--kind latency|bandwidth] [--size B] [--iterations N] [--duration D]\n"
      "               Run an RDMA probe from the agent to PEER (a probes.peers name or the\n"
      "               peer agent's HOST:PORT) now; prints it as ib_write_lat / ib_write_bw do.\n"
      "    probes [PEER] [--kind K] [--limit N]\n"
      "               The agent's recent probe results, newest first.\n"
      "    diagnose [--checks NAMES]\n"
      "               Check the node for the misalignments that break RoCE: PFC on one\n"
      "               priority and RoCE's DSCP on another, ECN off on the lossless priority,\n"
      "               rdma_cm left at RoCE v1, no RoCE v2 GID with an IP, RoCE MTU below\n"
      "               4096, a NIC in a narrow PCIe slot, no hugepages, a memlock limit,\n"
      "               failing probes, config not in force. Each finding says why and how\n"
      "               to fix it. Exits 1 when any finding is an error.\n"
      "    version    rocectl's version and, when reachable, the agent's.\n"
      "    help       This text.\n"
      "\n"
      "OPTIONS\n",
      p.Help(),
      "\n"
      "EXIT STATUS\n"
      "    0  success\n"
      "    1  the command failed; a one-line reason is printed (agent not reachable,\n"
      "       permission denied on the socket, deadline exceeded, ...)\n"
      "    2  usage error (unknown command or option, bad value)\n"
      "\n"
      "EXAMPLES\n"
      "    rocectl status\n"
      "    rocectl --target 10.0.0.11:7471 -o json status | jq '.devices[].name'\n"
      "    rocectl diagnose --checks pfc_dscp,ecn\n");
}

}  // namespace


namespace {
using roced::ctl::DescribeRpcError;
}  // namespace

int main(int argc, char** argv) {
  Globals g;
  roced::util::ArgParser parser;
  Register(&g, &parser);
  std::vector<std::string> rest;
  if (absl::Status s = parser.Parse(argc, argv, 1, true, &rest); !s.ok()) {
    std::cerr << "rocectl: " << s.message() << "\nTry 'rocectl --help'.\n";
    return kExitUsage;
  }
  if (g.help || (!rest.empty() && rest[0] == "help")) {
    std::cout << Help(parser);
    return kExitOk;
  }
  if (rest.empty()) {
    std::cerr << "rocectl: no command given\nTry 'rocectl --help'.\n";
    return kExitUsage;
  }
  auto output = roced::ctl::ParseOutput(g.output);
  if (!output.ok()) {
    std::cerr << "rocectl: " << output.status().message() << "\n";
    return kExitUsage;
  }
  const std::string command = rest[0];
  roced::ctl::ApplyFlags apply_flags;
  if (command == "apply") roced::ctl::RegisterApplyFlags(&apply_flags, &parser);
  roced::ctl::ProbeFlags probe_flags;
  if (command == "probe" || command == "probes") {
    roced::ctl::RegisterProbeFlags(command, &probe_flags, &parser);
  }
  roced::ctl::CountersFlags counters_flags;
  if (command == "counters") roced::ctl::RegisterCountersFlags(&counters_flags, &parser);
  roced::ctl::DiagnoseFlags diagnose_flags;
  if (command == "diagnose") roced::ctl::RegisterDiagnoseFlags(&diagnose_flags, &parser);
  // Flags may also follow the command (rocectl status -o json).
  std::vector<std::string> extra;
  std::vector<const char*> cargv;
  for (const auto& r : rest) cargv.push_back(r.c_str());
  if (absl::Status s = parser.Parse(static_cast<int>(cargv.size()), cargv.data(), 1, false, &extra);
      !s.ok()) {
    std::cerr << "rocectl: " << s.message() << "\nTry 'rocectl --help'.\n";
    return kExitUsage;
  }
  output = roced::ctl::ParseOutput(g.output);
  if (!output.ok()) {
    std::cerr << "rocectl: " << output.status().message() << "\n";
    return kExitUsage;
  }
  const std::string target = g.target.empty() ? "unix:" + g.socket : g.target;
  if (command == "apply" || command == "confirm") {
    roced::ctl::CommandContext cc{target, *output, g.timeout,
                                  grpc::CreateChannel(target, grpc::InsecureChannelCredentials())};
    return command == "apply" ? roced::ctl::RunApply(cc, apply_flags, extra)
                              : roced::ctl::RunConfirm(cc, extra);
  }
  if (command == "counters") {
    roced::ctl::CommandContext cc{target, *output, g.timeout,
                                  grpc::CreateChannel(target, grpc::InsecureChannelCredentials())};
    return roced::ctl::RunCounters(cc, counters_flags, extra);
  }
  if (command == "diagnose") {
    roced::ctl::CommandContext cc{target, *output, g.timeout,
                                  grpc::CreateChannel(target, grpc::InsecureChannelCredentials())};
    return roced::ctl::RunDiagnose(cc, diagnose_flags, extra);
  }
  if (command == "probe" || command == "probes") {
    roced::ctl::CommandContext cc{target, *output, g.timeout,
                                  grpc::CreateChannel(target, grpc::InsecureChannelCredentials())};
    return command == "probe" ? roced::ctl::RunProbeCommand(cc, probe_flags, extra)
                              : roced::ctl::RunProbesCommand(cc, probe_flags, extra);
  }
  if (command != "status" && command != "version") {
    std::cerr << "rocectl: unknown command '" << command << "'\nTry 'rocectl --help'.\n";
    return kExitUsage;
  }
  if (!extra.empty()) {
    std::cerr << "rocectl: " << command << " takes no arguments (got '" << extra[0] << "')\n";
    return kExitUsage;
  }

  const std::string where = g.target.empty() ? "unix:" + g.socket : g.target;
  auto channel = grpc::CreateChannel(where, grpc::InsecureChannelCredentials());
  auto stub = roced::v1::Agent::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(g.timeout));
  roced::v1::NodeState state;
  grpc::Status status = stub->GetState(&ctx, roced::v1::GetStateRequest(), &state);

  if (command == "version") {
    std::string agent = status.ok() ? absl::StrCat(state.agent().version(), " (commit ",
                                                     state.agent().git_commit(), ")")
                                    : "unreachable: " + DescribeRpcError(status, where);
    if (*output == roced::ctl::Output::kTable) {
      std::cout << "rocectl " << roced::kVersion << " (commit " << roced::kGitCommit << ")\n"
                << "roced   " << agent << "\n";
    } else {
      roced::v1::AgentInfo client;
      client.set_version(roced::kVersion);
      client.set_git_commit(roced::kGitCommit);
      std::string doc =
          absl::StrCat("{\"client\": ", roced::ctl::ToJson(client), ", \"agent\": ",
                       status.ok() ? roced::ctl::ToJson(state.agent()) : "null", "}\n");
      std::cout << (*output == roced::ctl::Output::kJson ? doc : roced::ctl::JsonToYaml(doc));
    }
    return status.ok() ? kExitOk : kExitError;
  }

  if (!status.ok()) {
    std::cerr << "rocectl: " << DescribeRpcError(status, where) << "\n";
    return kExitError;
  }
  switch (*output) {
    case roced::ctl::Output::kTable: std::cout << roced::ctl::StatusTable(state); break;
    case roced::ctl::Output::kJson: std::cout << roced::ctl::ToJson(state); break;
    case roced::ctl::Output::kYaml: std::cout << roced::ctl::ToYaml(state); break;
  }
  return kExitOk;
}

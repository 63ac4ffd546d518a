// rocectl: the command line for on-call engineers. See `rocectl --help`.
//
// main() parses the global flags, looks the command up in the table
// (commands.h), lets it register its own flags, builds the one
// CommandContext and runs the command.
#include <grpcpp/grpcpp.h>

#include <iostream>

#include "tools/rocectl/commands.h"
#include "tools/rocectl/format.h"
#include "util/args.h"

namespace {

using roced::ctl::kExitUsage;

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

int UsageError(absl::string_view message) {
  std::cerr << "rocectl: " << message << "\nTry 'rocectl --help'.\n";
  return kExitUsage;
}

// The -o value, or an error printed (exit 2).
bool ParseOutputFlag(const Globals& g, roced::ctl::Output* output) {
  auto parsed = roced::ctl::ParseOutput(g.output);
  if (!parsed.ok()) {
    std::cerr << "rocectl: " << parsed.status().message() << "\n";
    return false;
  }
  *output = *parsed;
  return true;
}

roced::ctl::CommandContext MakeContext(const Globals& g, roced::ctl::Output output) {
  const std::string where = g.target.empty() ? "unix:" + g.socket : g.target;
  return {where, output, g.timeout, grpc::CreateChannel(where, grpc::InsecureChannelCredentials())};
}

}  // namespace

int main(int argc, char** argv) {
  Globals g;
  roced::util::ArgParser parser;
  Register(&g, &parser);
  std::vector<std::string> rest;  // the command and everything after it
  if (absl::Status s = parser.Parse(argc, argv, 1, true, &rest); !s.ok()) {
    return UsageError(s.message());
  }
  if (g.help) rest.insert(rest.begin(), "help");
  if (rest.empty()) return UsageError("no command given");
  const roced::ctl::Command* command = roced::ctl::FindCommand(rest[0]);
  // A command that needs no agent (help) runs at once, before -o or any
  // later word is looked at.
  if (command != nullptr && !command->needs_agent) {
    return command->register_flags(&parser)({}, {rest.begin() + 1, rest.end()});
  }
  roced::ctl::Output output = roced::ctl::Output::kTable;
  if (!ParseOutputFlag(g, &output)) return kExitUsage;
  roced::ctl::CommandRun run = command != nullptr ? command->register_flags(&parser) : nullptr;
  // Flags may also follow the command (rocectl status -o json).
  std::vector<std::string> args;
  std::vector<const char*> cargv;
  for (const auto& r : rest) cargv.push_back(r.c_str());
  if (absl::Status s = parser.Parse(static_cast<int>(cargv.size()), cargv.data(), 1, false, &args);
      !s.ok()) {
    return UsageError(s.message());
  }
  if (!ParseOutputFlag(g, &output)) return kExitUsage;
  // Only now, as rocectl always did: a bad option or -o value is named first.
  if (command == nullptr) return UsageError("unknown command '" + rest[0] + "'");
  // `rocectl COMMAND ... --help` describes the command and runs nothing
  // (it used to be ignored: `rocectl apply -f x.yaml --help` applied).
  if (g.help) {
    std::cout << "Usage: rocectl [OPTIONS] " << command->usage << "\n\n"
              << command->summary << "\n\nSee 'rocectl --help' for the options.\n";
    return roced::ctl::kExitOk;
  }
  return run(MakeContext(g, output), args);
}

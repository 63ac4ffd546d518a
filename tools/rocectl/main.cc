// rocectl: the command line for on-call engineers. See `rocectl --help`.
//
// main() parses the global flags, looks the command up in the table
// (commands.h), lets it register its own flags, builds the one
// CommandContext and runs the command.
#include <grpc/support/log.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <mutex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "access/grpc_tls.h"
#include "access/tls_files.h"
#include "model/defaults.h"
#include "roced/version.h"
#include "tools/rocectl/commands.h"
#include "tools/rocectl/format.h"
#include "tools/rocectl/tls_probe.h"
#include "util/args.h"

namespace {

using roced::ctl::kExitUsage;

struct Globals {
  std::string target;
  std::string socket = roced::model::defaults::kSocketPath;
  std::string output = "table";
  absl::Duration timeout = absl::Seconds(10);
  roced::access::TlsFiles tls;
  std::string server_name;
  bool insecure = false;
  bool help = false;
  bool version = false;
};

// Defaults from the environment, so on-call need not type them: flags
// given on the command line win.
void FromEnvironment(Globals* g) {
  auto env = [](const char* name, std::string* out) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') *out = v;
  };
  env("ROCECTL_TARGET", &g->target);
  env("ROCECTL_CERT", &g->tls.cert);
  env("ROCECTL_KEY", &g->tls.key);
  env("ROCECTL_CA", &g->tls.ca);
}

void Register(Globals* g, roced::util::ArgParser* p) {
  p->AddString("target", &g->target, "HOST:PORT",
               absl::StrCat("Talk to the agent's gRPC TCP endpoint (e.g. 10.0.0.11:", roced::model::defaults::kGrpcPort,
                            ") instead of the local unix socket."));
  p->AddString("socket", &g->socket, "PATH", "The agent's local unix socket.");
  p->AddString("cert", &g->tls.cert, "FILE",
               "Client certificate (PEM) for --target; its identity gets the roles the "
               "agent's access file gives it. Default: $ROCECTL_CERT.");
  p->AddString("key", &g->tls.key, "FILE", "Private key of --cert (PEM). Default: $ROCECTL_KEY.");
  p->AddString("ca", &g->tls.ca, "FILE",
               "CA bundle (PEM) the agent's certificate must chain to; --target needs it unless "
               "--insecure. Default: $ROCECTL_CA.");
  p->AddString("server-name", &g->server_name, "NAME",
               "Name the agent's certificate must carry, when it differs from the --target host.");
  p->AddBool("insecure", &g->insecure,
             "Plaintext TCP, for an agent run with --insecure (tests, labs).");
  p->AddString("output", &g->output, "FORMAT",
               "Output format: table (for people), json (the proto3 JSON mapping, for "
               "scripts), yaml.",
               'o');
  p->AddDuration("timeout", &g->timeout, "DUR", "Deadline for each call to the agent.");
  p->AddBool("help", &g->help, "Print this help, then exit.", 'h');
  p->AddBool("version", &g->version, "Print rocectl's version, then exit (`rocectl version` asks the agent too).");
}

// --target HOST (no port) means the agent's default port: HOST:7471, and
// [ADDR]:7471 for an IPv6 address with or without its brackets.
std::string WithDefaultPort(const std::string& target) {
  if (target.empty()) return target;
  const std::string port = absl::StrCat(":", roced::model::defaults::kGrpcPort);
  if (target.front() == '[') return target.back() == ']' ? target + port : target;
  const size_t colons = std::count(target.begin(), target.end(), ':');
  if (colons == 0) return target + port;
  if (colons > 1) return absl::StrCat("[", target, "]", port);  // a bare IPv6 address
  return target;
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

// Channels to other agents (mesh --targets) with the TCP credentials the
// flags give, --target or not: plaintext under --insecure, else mutual TLS
// by the names the agents' certificates carry (--server-name is for
// --target alone); null without --ca. The credentials are made on first
// use: each set watches its files with a thread of its own, which only
// mesh --targets needs.
std::function<std::shared_ptr<grpc::Channel>(const std::string&)> Connector(const Globals& g) {
  if (g.insecure) {
    return [](const std::string& address) { return grpc::CreateChannel(address, grpc::InsecureChannelCredentials()); };
  }
  if (g.tls.ca.empty()) return nullptr;
  auto creds = std::make_shared<std::shared_ptr<grpc::ChannelCredentials>>();
  auto once = std::make_shared<std::once_flag>();
  return [creds, once, tls = g.tls](const std::string& address) {
    std::call_once(*once, [&] { *creds = roced::access::ClientTlsCredentials(tls); });
    return grpc::CreateChannel(address, *creds);
  };
}

// The channel to the agent: the unix socket, or TCP with TLS (plaintext
// under --insecure). A missing, unreadable, expired or mismatched
// certificate file is refused here with one line naming it.
absl::StatusOr<roced::ctl::CommandContext> MakeContext(const Globals& g, roced::ctl::Output output) {
  if (g.target.empty()) {
    // The peers' credentials (mesh/rollout --targets) come from --ca,
    // --cert and --key: checked (each read bounded, a regular file) before
    // gRPC's FileWatcherCertificateProvider reads them itself, unbounded.
    if (!g.insecure && !g.tls.ca.empty()) {
      if (absl::Status s = roced::access::CheckTlsFiles(g.tls, {"--cert", "--key", "--ca"}, false, absl::Now());
          !s.ok()) {
        return s;
      }
    }
    const std::string where = "unix:" + g.socket;
    return roced::ctl::CommandContext{where, output, g.timeout,
                                      grpc::CreateChannel(where, grpc::InsecureChannelCredentials()), nullptr,
                                      Connector(g)};
  }
  if (g.insecure) {
    auto explain = [](const grpc::Status& s) {
      if (!absl::StrContains(s.error_message(), "Socket closed")) return std::string();
      return std::string("the connection was closed: if the agent serves mutual TLS, drop --insecure and give "
                         "--ca, --cert and --key");
    };
    return roced::ctl::CommandContext{g.target, output, g.timeout,
                                      grpc::CreateChannel(g.target, grpc::InsecureChannelCredentials()), explain,
                                      Connector(g)};
  }
  if (g.tls.ca.empty()) {
    return absl::InvalidArgumentError(
        "--target uses mutual TLS: give --ca (and --cert/--key; or ROCECTL_CA, ROCECTL_CERT, ROCECTL_KEY), "
        "or --insecure for an agent run with --insecure");
  }
  if (g.tls.cert.empty()) {
    // The agent refuses a TLS client without a certificate at the handshake.
    return absl::InvalidArgumentError(
        "--target uses mutual TLS and the agent requires a client certificate: give --cert and --key (or "
        "ROCECTL_CERT, ROCECTL_KEY)");
  }
  if (absl::Status s = roced::access::CheckTlsFiles(g.tls, {"--cert", "--key", "--ca"}, false, absl::Now());
      !s.ok()) {
    return s;
  }
  grpc::ChannelArguments args;
  if (!g.server_name.empty()) args.SetSslTargetNameOverride(g.server_name);
  auto channel = grpc::CreateCustomChannel(g.target, roced::access::ClientTlsCredentials(g.tls), args);
  auto explain = [target = g.target, tls = g.tls, name = g.server_name, timeout = g.timeout](const grpc::Status&) {
    return roced::ctl::ExplainTlsFailure(target, tls, name, std::min(timeout, absl::Seconds(3)));
  };
  return roced::ctl::CommandContext{g.target, output, g.timeout, channel, explain, Connector(g)};
}

}  // namespace

int main(int argc, char** argv) {
  // gRPC logs a failed handshake to stderr itself; rocectl says what went
  // wrong in its own one line instead.
  gpr_set_log_function([](gpr_log_func_args*) {});
  Globals g;
  FromEnvironment(&g);
  roced::util::ArgParser parser;
  Register(&g, &parser);
  std::vector<std::string> rest;  // the command and everything after it
  if (absl::Status s = parser.Parse(argc, argv, 1, true, &rest); !s.ok()) {
    return UsageError(s.message());
  }
  if (g.version && !g.help) {
    std::cout << "rocectl " << roced::kVersion << " (commit " << roced::kGitCommit << ")\n";
    return roced::ctl::kExitOk;
  }
  g.target = WithDefaultPort(g.target);
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
  // (`rocectl apply -f x.yaml --help` applies nothing).
  if (g.help) {
    // The command's own flags, from a parser that holds only them.
    roced::util::ArgParser own;
    (void)command->register_flags(&own);
    std::cout << roced::ctl::CommandHelp(*command, own.Help());
    return roced::ctl::kExitOk;
  }
  absl::StatusOr<roced::ctl::CommandContext> ctx = MakeContext(g, output);
  if (!ctx.ok()) {
    const std::string text = roced::ctl::FailureText(output, ctx.status().message(), roced::ctl::kExitFailed, "");
    (output == roced::ctl::Output::kTable ? std::cerr : std::cout) << text;
    return roced::ctl::kExitFailed;
  }
  return run(*ctx, args);
}

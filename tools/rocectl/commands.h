// rocectl's command table: every command with its help entry, its flags and
// its run, and the context main() builds once for whichever command runs.
// Each command lives in its own <name>_cmd.cc; its run returns the process
// exit code, one table for every command (below; docs/api.md).
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "roced/v1/agent.pb.h"
#include "roced/v1/state.pb.h"
#include "tools/rocectl/format.h"
#include "util/args.h"

namespace roced::ctl {

// Done, nothing to look at.
constexpr int kExitOk = 0;
// Done, and there is something to look at: an error finding (diagnose), a
// suspect (mesh), a failed probe, not ready, a dry run with a difference,
// a rollout halted by its gates, or nothing checked at all.
constexpr int kExitFindings = 1;
// The command line is wrong (said on stderr with the flag).
constexpr int kExitUsage = 2;
// Not done: the agent unreachable, the call refused or failed, a file that
// cannot be read or is not valid.
constexpr int kExitFailed = 3;

// What every command gets: built once by main() from the global flags.
struct CommandContext {
  std::string where;  // target as shown in messages
  Output output = Output::kTable;
  absl::Duration timeout = absl::Seconds(10);
  std::shared_ptr<grpc::Channel> channel;  // null for commands that need no agent
  // Over TLS: why a handshake with the agent fails ("" when it does not),
  // asked when a call comes back UNAVAILABLE.
  std::function<std::string(const grpc::Status&)> explain_unavailable;
  // A channel to another agent at host:port with the same credentials
  // (rocectl mesh --targets); null over the unix socket.
  std::function<std::shared_ptr<grpc::Channel>(const std::string& address)> connect;
};

// One line saying why an RPC failed, for people.
std::string DescribeRpcError(const grpc::Status& status, const std::string& where);
// The same, with the TLS diagnosis of `ctx` for UNAVAILABLE.
std::string DescribeRpcError(const grpc::Status& status, const CommandContext& ctx);

// A command that could not be done: says why and returns `exit_code`.
// Under -o json (yaml) as {"error": {"message", "exitCode"[, "grpcCode"]}}
// on stdout, so a script reads one document whatever happened; under
// table one line on stderr.
int Fail(const CommandContext& ctx, absl::string_view message, int exit_code = kExitFailed);
// The same for a failed call (DescribeRpcError's line, the gRPC code).
int FailRpc(const CommandContext& ctx, const grpc::Status& status);
// The failure as Fail() prints it (exposed for tests).
std::string FailureText(Output output, absl::string_view message, int exit_code, absl::string_view grpc_code);

// For commands that take no arguments: false (after saying so) when `args`
// is not empty.
bool NoArguments(absl::string_view command, const std::vector<std::string>& args);

// Agent.GetState within the context's timeout.
grpc::Status FetchState(const CommandContext& ctx, roced::v1::NodeState* state);

// A command's run for one invocation: `args` are the words after the command
// name that are not flags.
using CommandRun =
    std::function<int(const CommandContext& ctx, const std::vector<std::string>& args)>;

struct Command {
  absl::string_view name;
  // Its entry in `rocectl --help`: the synopsis after `rocectl [OPTIONS]`
  // (starting with the name), and what it does, wrapped to the help's
  // column (lines of at most 75 characters).
  absl::string_view usage;
  absl::string_view summary;
  // Registers the command's own flags on `parser` and returns its run, which
  // reads them once `parser` has parsed the command line.
  CommandRun (*register_flags)(util::ArgParser* parser);
  // False: the command runs at once, before the rest of the command line is
  // checked, with no channel (help).
  bool needs_agent;
  // Its line in `rocectl --help` (at most 64 characters) and the example
  // `rocectl COMMAND --help` ends with (one command line, after "rocectl ").
  absl::string_view brief;
  absl::string_view example;
};

// A help page fits a terminal screen: at most this many lines of at most
// this many columns (tests/unit/rocectl_commands_test.cc holds every page
// to it; the full reference is docs/api.md).
inline constexpr size_t kHelpLines = 24;
inline constexpr size_t kHelpColumns = 80;

// Every command, in the order `rocectl --help` lists them.
const std::vector<Command>& Commands();
// The command called `name`, or null.
const Command* FindCommand(absl::string_view name);

// The top-level help page: synopsis, one line per command (from the
// table), the global flags in brief, exit status and an example.
std::string TopLevelHelp();
// `rocectl help options`: every global flag with its whole help
// (`options`, the parser's OPTIONS block).
std::string OptionsHelp(const std::string& options);
// `rocectl COMMAND --help`: usage, summary, the command's own flags
// (`flags`, its parser's OPTIONS block, shown one line each with the
// first sentence of their help) and the example.
std::string CommandHelp(const Command& command, const std::string& flags);

// The commands' binders, one per <name>_cmd.cc, for the table.
CommandRun BindStatus(util::ArgParser* parser);
CommandRun BindGet(util::ArgParser* parser);
CommandRun BindReady(util::ArgParser* parser);
CommandRun BindVersion(util::ArgParser* parser);
CommandRun BindApply(util::ArgParser* parser);
CommandRun BindConfirm(util::ArgParser* parser);
CommandRun BindRollback(util::ArgParser* parser);
CommandRun BindCounters(util::ArgParser* parser);
CommandRun BindProbe(util::ArgParser* parser);
CommandRun BindProbes(util::ArgParser* parser);
CommandRun BindDiagnose(util::ArgParser* parser);
CommandRun BindMesh(util::ArgParser* parser);
CommandRun BindEvents(util::ArgParser* parser);
CommandRun BindRollout(util::ArgParser* parser);
CommandRun BindHelp(util::ArgParser* parser);

// One line for people per WatchState event (rocectl events): the time, the
// kind and what happened.
std::string EventLine(const roced::v1::StateEvent& event);

}  // namespace roced::ctl

// roced: the RoCE node agent. See `roced --help`.
#include <grpc/support/log.h>
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/core/agent.h"
#include "agent/daemon.h"
#include "agent/daemon_options.h"
#include "agent/flags.h"
#include "model/validate.h"
#include "roced/version.h"
#include "util/args.h"
#include "util/escape.h"
#include "util/fd_limit.h"
#include "util/log.h"
#include "util/log_limiter.h"
#include "util/sd_notify.h"

namespace {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

// Parses the command line. Returns the exit code when the process is done
// already (--help, --version, a usage error), nullopt to go on.
std::optional<int> ParseFlags(int argc, char** argv, roced::agent::Flags* flags,
                              roced::util::ArgParser* parser) {
  roced::agent::RegisterFlags(flags, parser);
  std::vector<std::string> positional;
  if (absl::Status s = parser->Parse(argc, argv, 1, false, &positional); !s.ok()) {
    std::cerr << "roced: " << s.message() << "\nTry 'roced --help'.\n";
    return kExitUsage;
  }
  if (!positional.empty()) {
    std::cerr << "roced: unexpected argument '" << positional[0] << "'\nTry 'roced --help'.\n";
    return kExitUsage;
  }
  if (flags->help) {
    std::cout << roced::agent::HelpText(*parser);
    return 0;
  }
  if (flags->version) {
    std::cout << "roced " << roced::kVersion << " (commit " << roced::kGitCommit << ")\n";
    return 0;
  }
  roced::log::Level level;
  if (!roced::log::ParseLevel(flags->log_level, &level)) {
    std::cerr << "roced: --log-level: '" << flags->log_level
              << "' is not one of debug, info, warning, error\n";
    return kExitUsage;
  }
  roced::log::SetLevel(level);
  return std::nullopt;
}

// --check-config: validate the file, change nothing.
int CheckConfig(const std::string& path) {
  std::vector<roced::v1::ValidationIssue> warnings;
  auto config = roced::model::LoadConfigFile(path, &warnings);
  std::cout << roced::model::FormatIssues(path, warnings);
  if (!config.ok()) {
    std::cerr << config.status().message() << "\n";
    return kExitError;
  }
  std::cout << path << ": valid\n";
  return 0;
}

// gRPC's own log lines (ERROR and above unless GRPC_VERBOSITY says more),
// through ours, at most one per source line a minute: a refused TLS
// handshake is one "Handshake failed" line, and a client can make
// thousands a second. The count of the dropped ones comes with the next.
void GrpcLogLine(gpr_log_func_args* args) {
  static auto* limiter = new roced::util::LogLimiter(absl::Seconds(60), 64);
  const absl::string_view file = args->file == nullptr ? "?" : args->file;
  const std::string where = absl::StrCat(file.substr(file.rfind('/') + 1), ":", args->line);
  const std::optional<uint64_t> dropped = limiter->Allow(where, absl::Now());
  if (!dropped) return;
  const std::string text =
      absl::StrCat("grpc ", where, "] ", roced::util::EscapeForLog(args->message == nullptr ? "" : args->message, 512),
                   *dropped == 0 ? "" : absl::StrCat(" (", *dropped, " more like it in the last minute not logged)"));
  if (args->severity == GPR_LOG_SEVERITY_ERROR) {
    LOG_ERROR << text;
  } else if (args->severity == GPR_LOG_SEVERITY_INFO) {
    LOG_INFO << text;
  } else {
    LOG_DEBUG << text;
  }
}

// Process-wide settings made before any thread starts: the signals main()
// takes synchronously, gRPC's log lines, and the allocator.
sigset_t PrepareProcess() {
  // Signals are taken synchronously by the main thread (sigtimedwait);
  // block them before any thread starts so none of those gets them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // Every scrape allocates and frees a couple of MB. glibc would hand that
  // back to the kernel each time (trim, munmap) and fault it in again on the
  // next scrape, which costs more than the scrape's own work; one arena
  // keeps what is retained small (roced allocates little, contention is
  // nil). Before any thread starts, so every thread uses that arena.
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_TRIM_THRESHOLD, 16 << 20);
  mallopt(M_MMAP_THRESHOLD, 16 << 20);
  signal(SIGPIPE, SIG_IGN);
  gpr_set_log_function(&GrpcLogLine);
  return signals;
}

// The main thread while serving: signals (SIGHUP reloads the config file,
// SIGTERM/SIGINT return) and the systemd watchdog.
void ServeSignals(const sigset_t& signals, roced::agent::Agent* agent, const std::string& config) {
  // Pings at half the watchdog interval; without a watchdog the thread
  // sleeps until a signal comes.
  const std::optional<uint64_t> watchdog_usec = roced::util::SdWatchdogUsec();
  const bool watchdog = watchdog_usec.has_value();
  const absl::Duration tick = watchdog ? absl::Microseconds(*watchdog_usec / 2) : absl::InfiniteDuration();
  while (true) {
    int sig;
    if (watchdog) {
      struct timespec ts = absl::ToTimespec(tick);
      sig = sigtimedwait(&signals, nullptr, &ts);
      roced::util::SdNotify("WATCHDOG=1");
    } else {
      sig = sigwaitinfo(&signals, nullptr);
    }
    if (sig < 0) continue;  // timeout or EINTR
    if (sig == SIGHUP) {
      LOG_INFO << "SIGHUP: reloading " << config;
      roced::util::SdNotify("RELOADING=1");
      if (absl::Status s = agent->LoadConfig(); !s.ok()) {
        LOG_ERROR << "config reload rejected; previous config stays in force:\n" << s.message();
      } else {
        LOG_INFO << "config reloaded: generation " << agent->State().config().generation();
      }
      roced::util::SdNotify("READY=1");
      continue;
    }
    LOG_INFO << (sig == SIGTERM ? "SIGTERM" : "SIGINT") << ": stopping";
    return;
  }
}

int Run(int argc, char** argv) {
  roced::agent::Flags flags;
  roced::util::ArgParser parser;
  if (std::optional<int> done = ParseFlags(argc, argv, &flags, &parser)) return *done;
  if (flags.check_config) return CheckConfig(flags.config);
  absl::StatusOr<roced::agent::DaemonOptions> options = roced::agent::DaemonOptionsFromFlags(flags);
  if (!options.ok()) {
    std::cerr << "roced: " << options.status().message() << "\n";
    return kExitError;
  }
  const sigset_t signals = PrepareProcess();
  // Descriptors bound connections and cached counter files: as many as the
  // hard limit allows (the gRPC listener's connection cap is sized from it).
  const roced::util::FdLimit fds = roced::util::RaiseFdLimit();
  LOG_INFO << "open-file limit " << fds.soft
           << (fds.soft > fds.before ? absl::StrCat(" (raised from ", fds.before, ")") : std::string())
           << ", hard limit " << fds.hard;

  // A state directory that cannot be created or written does not stop the
  // agent: it serves, degraded, and says why (the "state" component).
  roced::agent::Daemon running(*std::move(options));
  if (absl::Status s = running.Start(); !s.ok()) {
    std::cerr << "roced: " << s.message() << "\n";
    return kExitError;
  }
  const roced::agent::ServerOptions& server = running.options().server;
  LOG_INFO << "roced " << roced::kVersion << " ready: gRPC "
           << (server.grpc_listen.empty() ? "TCP off" : server.grpc_listen) << " (port "
           << running.server()->grpc_port() << (server.insecure ? ", plaintext" : ", mutual TLS") << "), unix:"
           << flags.socket << ", metrics " << flags.metrics_listen << " (port " << running.server()->metrics_port()
           << "), " << running.agent()->State().devices_size() << " RDMA device(s)";
  roced::util::SdNotify("READY=1\nSTATUS=serving");
  ServeSignals(signals, running.agent(), flags.config);
  roced::util::SdNotify("STOPPING=1");
  running.Stop(absl::Seconds(5));
  LOG_INFO << "stopped";
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }

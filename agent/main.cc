// roced: the RoCE node agent. See `roced --help`.
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "access/grpc_tls.h"
#include "access/policy.h"
#include "agent/agent.h"
#include "agent/backends.h"
#include "agent/counters_runtime.h"
#include "agent/lldp_runtime.h"
#include "agent/mesh_runtime.h"
#include "agent/probe_runtime.h"
#include "agent/flags.h"
#include "agent/server.h"
#include "agent/web_config.h"
#include "model/validate.h"
#include "roced/version.h"
#include "util/args.h"
#include "util/log.h"
#include "util/sd_notify.h"
#include "util/status_macros.h"

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

// Process-wide settings made before any thread starts: the signals main()
// takes synchronously, and the allocator.
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
  return signals;
}

roced::hal::Paths PathsFrom(const roced::agent::Flags& flags) {
  roced::hal::Paths paths;
  paths.sysfs = flags.sysfs_root;
  paths.procfs = flags.procfs_root;
  paths.configfs = flags.configfs_root;
  paths.debugfs = flags.debugfs_root;
  return paths;
}

roced::agent::AgentOptions AgentOptionsFrom(const roced::agent::Flags& flags,
                                            const roced::agent::NodeBackends& node) {
  roced::agent::AgentOptions options;
  options.backends = node.agent();
  options.paths = PathsFrom(flags);
  options.config_path = flags.config;
  options.config_optional = flags.config == roced::agent::Flags().config;
  options.state_dir = flags.state_dir;
  options.discovery_interval = flags.discovery_interval;
  return options;
}

// The gRPC server's options from the flags: the access policy (read here:
// a bad file stops start-up), TLS or --insecure for TCP. The default TCP
// address without either is not opened (the unix socket is); an explicit
// one is left for Server::Start to refuse with the flags to add. The web
// config file is read and checked here too.
absl::StatusOr<roced::agent::ServerOptions> ServerOptionsFrom(const roced::agent::Flags& flags) {
  roced::agent::ServerOptions o;
  o.grpc_listen = flags.grpc_listen;
  o.socket_path = flags.socket;
  o.socket_group = flags.socket_group;
  o.metrics_listen = flags.metrics_listen;
  o.tls = {flags.tls_cert, flags.tls_key, flags.tls_client_ca};
  o.insecure = flags.insecure;
  o.insecure_allow_remote = flags.insecure_allow_remote;
  o.reflection = flags.grpc_reflection;
  if (!flags.state_dir.empty()) o.audit_log = flags.state_dir + "/audit.log";
  if (!flags.access_file.empty()) {
    ASSIGN_OR_RETURN(o.policy, roced::access::LoadAccessPolicy(flags.access_file));
  }
  if (!flags.web_config_file.empty()) {
    if (flags.metrics_listen.empty()) {
      return absl::InvalidArgumentError(
          "--web.config.file is given but --metrics-listen is empty: there is no endpoint to apply it to");
    }
    ASSIGN_OR_RETURN(o.metrics_web_config, roced::agent::LoadWebConfig(flags.web_config_file));
  }
  if (o.grpc_listen == roced::agent::Flags().grpc_listen && !o.tls.any() && !o.insecure) {
    LOG_WARNING << "gRPC on TCP " << o.grpc_listen
                << " not opened: it needs --tls-cert, --tls-key and --tls-client-ca (or --insecure); "
                   "serving the unix socket only";
    o.grpc_listen.clear();
  }
  return o;
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

// LLDP only on the live kernel: a fixture tree's netdev names mean nothing
// to it. Null otherwise.
std::unique_ptr<roced::agent::LldpRuntime> StartLldp(const roced::agent::NodeBackends& node,
                                                     roced::agent::Agent* agent) {
  if (!node.live()) return nullptr;
  roced::agent::LldpRuntimeOptions lldp_options;
  if (node.dcb() != nullptr) {
    lldp_options.dcb_read = [dcb = node.dcb()](const std::string& netdev) { return dcb->Get(netdev); };
  }
  auto lldp = std::make_unique<roced::agent::LldpRuntime>(agent, lldp_options);
  lldp->Start();
  return lldp;
}

roced::agent::ProbeRuntimeOptions ProbeOptionsFrom(const roced::agent::Flags& flags,
                                                   const roced::agent::NodeBackends& node,
                                                   const roced::agent::ServerOptions& server,
                                                   prometheus::Registry* registry) {
  roced::agent::ProbeRuntimeOptions o;
  o.factory = node.endpoints();
  o.registry = registry;
  o.sysfs_root = flags.sysfs_root;
  o.procfs_root = flags.procfs_root;
  if (!flags.state_dir.empty()) o.baseline_path = flags.state_dir + "/probe-baselines.json";
  // Peers are called with this agent's own certificate (their access
  // files give it the peer role), or plaintext under --insecure.
  if (server.tls.any()) o.peer_credentials = roced::access::ClientTlsCredentials(server.tls);
  return o;
}

// The mesh flags as MeshRuntimeOptions; errors name the flag.
absl::StatusOr<roced::agent::MeshRuntimeOptions> MeshOptionsFrom(const roced::agent::Flags& flags) {
  roced::agent::MeshRuntimeOptions o;
  if (!flags.mesh_dns.empty() && !flags.mesh_inventory.empty()) {
    return absl::InvalidArgumentError("--mesh-dns and --mesh-inventory: give one membership source, not both");
  }
  o.inventory_path = flags.mesh_inventory;
  if (!flags.mesh_dns.empty()) {
    absl::StatusOr<std::pair<std::string, uint16_t>> dns = roced::agent::ParseMeshDns(flags.mesh_dns);
    if (!dns.ok()) return dns.status();
    o.dns_name = dns->first;
    o.dns_port = dns->second;
  }
  absl::StatusOr<std::vector<uint32_t>> dscps = roced::agent::ParseMeshDscps(flags.mesh_dscps);
  if (!dscps.ok()) return dscps.status();
  o.prober.schedule.dscps = *dscps;
  o.prober.results.window = flags.mesh_window;
  if (absl::Status s = roced::mesh::MeshProber::Create("check", o.prober).status(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--mesh-window: ", s.message()));
  }
  return o;
}

// The mesh options (validated before anything started) completed from the
// node: the mesh's UD ports need verbs, so it runs on the live kernel only.
void FinishMeshOptions(const roced::agent::NodeBackends& node, const roced::agent::Flags& flags,
                       prometheus::Registry* registry, std::shared_ptr<grpc::ChannelCredentials> peer_credentials,
                       roced::agent::MeshRuntimeOptions* o) {
  if (!node.live()) {
    o->inventory_path.clear();
    o->dns_name.clear();
  }
  o->registry = registry;
  o->procfs_root = flags.procfs_root;
  o->peer_credentials = std::move(peer_credentials);
}

int Run(int argc, char** argv) {
  roced::agent::Flags flags;
  roced::util::ArgParser parser;
  if (std::optional<int> done = ParseFlags(argc, argv, &flags, &parser)) return *done;
  if (flags.check_config) return CheckConfig(flags.config);
  absl::StatusOr<roced::agent::ServerOptions> server_options = ServerOptionsFrom(flags);
  absl::StatusOr<roced::agent::MeshRuntimeOptions> mesh_options = MeshOptionsFrom(flags);
  for (const absl::Status& s : {server_options.status(), mesh_options.status()}) {
    if (s.ok()) continue;
    std::cerr << "roced: " << s.message() << "\n";
    return kExitError;
  }
  const sigset_t signals = PrepareProcess();

  // A state directory that cannot be created or written does not stop the
  // agent: it serves, degraded, and says why (the "state" component).

  // The composition root: the node's backends are chosen here, once, and
  // every part gets its share.
  const roced::agent::NodeBackends node(PathsFrom(flags), /*use_verbs=*/true);
  auto registry = std::make_shared<prometheus::Registry>();
  roced::agent::AgentOptions agent_options = AgentOptionsFrom(flags, node);
  agent_options.registry = registry;
  roced::agent::Agent agent(agent_options);
  if (absl::Status s = agent.LoadConfig(/*startup=*/true); !s.ok()) {
    std::cerr << "roced: config rejected:\n" << s.message() << "\n";
    return kExitError;
  }
  agent.Start();
  roced::agent::CountersRuntime counters(
      &agent, {.paths = PathsFrom(flags), .netdev_stats = node.netdev_stats(), .dcb = node.dcb()});
  counters.Start();
  const roced::agent::ProbeRuntimeOptions probe_options = ProbeOptionsFrom(flags, node, *server_options, registry.get());
  roced::agent::ProbeRuntime probes(&agent, probe_options);
  probes.Start();

  std::unique_ptr<roced::agent::LldpRuntime> lldp = StartLldp(node, &agent);

  FinishMeshOptions(node, flags, registry.get(), probe_options.peer_credentials, &*mesh_options);
  roced::agent::MeshRuntime mesh(&agent, lldp.get(), *mesh_options);
  mesh.Start();

  roced::agent::ConfirmGuard confirm(&agent, {.counters = &counters, .probes = &probes,
                                              .mesh = mesh.enabled() ? &mesh : nullptr});
  confirm.Start();

  roced::agent::Server server({&agent, &counters, &probes, registry, lldp.get(), mesh.enabled() ? &mesh : nullptr,
                               &confirm},
                              *server_options);
  auto stop = [&] {
    confirm.Stop();
    mesh.Stop();
    if (lldp) lldp->Stop();
    probes.Stop();
    counters.Stop();
    agent.Stop();
  };
  if (absl::Status s = server.Start(); !s.ok()) {
    std::cerr << "roced: " << s.message() << "\n";
    stop();
    return kExitError;
  }
  LOG_INFO << "roced " << roced::kVersion << " ready: gRPC "
           << (server_options->grpc_listen.empty() ? "TCP off" : server_options->grpc_listen)
           << " (port " << server.grpc_port() << (server_options->insecure ? ", plaintext" : ", mutual TLS")
           << "), unix:" << flags.socket << ", metrics "
           << flags.metrics_listen << " (port " << server.metrics_port() << "), "
           << agent.State().devices_size() << " RDMA device(s)";
  roced::util::SdNotify("READY=1\nSTATUS=serving");
  ServeSignals(signals, &agent, flags.config);
  roced::util::SdNotify("STOPPING=1");
  server.Shutdown(absl::Seconds(5));
  stop();
  LOG_INFO << "stopped";
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }

#include "agent/daemon_options.h"

#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "access/grpc_tls.h"
#include "access/tls_files.h"
#include "access/tls_mirror.h"
#include "access/policy.h"
#include "agent/serve/web_config.h"
#include "mesh/prober.h"
#include "util/log.h"
#include "util/status_macros.h"

namespace roced::agent {

namespace {

hal::Paths PathsFrom(const Flags& flags) {
  hal::Paths paths;
  paths.sysfs = flags.sysfs_root;
  paths.procfs = flags.procfs_root;
  paths.configfs = flags.configfs_root;
  paths.debugfs = flags.debugfs_root;
  return paths;
}

AgentOptions AgentOptionsFrom(const Flags& flags) {
  AgentOptions options;
  options.config_path = flags.config;
  options.config_optional = flags.config == Flags().config;
  options.state_dir = flags.state_dir;
  options.discovery_interval = flags.discovery_interval;
  return options;
}

// The gRPC server's options: the access policy (read here: a bad file stops
// start-up), TLS or --insecure for TCP. The default TCP address without
// either is not opened (the unix socket is); an explicit one is left for
// Server::Start to refuse with the flags to add. The web config file is read
// and checked here too.
absl::StatusOr<ServerOptions> ServerOptionsFrom(const Flags& flags) {
  ServerOptions o;
  o.grpc_listen = flags.grpc_listen;
  o.socket_path = flags.socket;
  o.socket_group = flags.socket_group;
  o.metrics_listen = flags.metrics_listen;
  o.tls = {flags.tls_cert, flags.tls_key, flags.tls_client_ca};
  o.insecure = flags.insecure;
  o.insecure_allow_remote = flags.insecure_allow_remote;
  o.reflection = flags.grpc_reflection;
  if (!flags.state_dir.empty()) o.audit_log = flags.state_dir + "/audit.log";
  // The TLS files checked (each read bounded, a regular file) before any
  // credentials are built from them: gRPC's FileWatcherCertificateProvider
  // reads files itself, unbounded (a FIFO blocks it, a huge file is read
  // whole), and the peers' client credentials are built just below.
  // gRPC is then given roced's own copies of them, kept current
  // (access::TlsMirror), under the state directory.
  if (o.tls.any()) {
    access::TlsFlagNames names{"--tls-cert", "--tls-key", "--tls-client-ca"};
    RETURN_IF_ERROR(access::CheckTlsFiles(o.tls, names, /*need_identity=*/false, absl::Now()));
    ASSIGN_OR_RETURN(o.tls_mirror,
                     access::TlsMirror::Create(o.tls, {.dir = flags.state_dir.empty() ? "" : flags.state_dir + "/tls",
                                                       .names = names}));
    o.tls = o.tls_mirror->copies();
  }
  if (!flags.access_file.empty()) {
    ASSIGN_OR_RETURN(o.policy, access::LoadAccessPolicy(flags.access_file));
  }
  if (!flags.web_config_file.empty()) {
    if (flags.metrics_listen.empty()) {
      return absl::InvalidArgumentError(
          "--web.config.file is given but --metrics-listen is empty: there is no endpoint to apply it to");
    }
    ASSIGN_OR_RETURN(o.metrics_web_config, LoadWebConfig(flags.web_config_file));
  }
  if (o.grpc_listen == Flags().grpc_listen && !o.tls.any() && !o.insecure) {
    LOG_WARNING << "gRPC on TCP " << o.grpc_listen
                << " not opened: it needs --tls-cert, --tls-key and --tls-client-ca (or --insecure); "
                   "serving the unix socket only";
    o.grpc_listen.clear();
  }
  return o;
}

ProbeRuntimeOptions ProbeOptionsFrom(const Flags& flags, const ServerOptions& server) {
  ProbeRuntimeOptions o;
  if (!flags.state_dir.empty()) o.baseline_path = flags.state_dir + "/probe-baselines.json";
  // Peers are called with this agent's own certificate (their access
  // files give it the peer role), or plaintext under --insecure.
  if (server.tls.any()) o.peer_credentials = access::ClientTlsCredentials(server.tls);
  return o;
}

// The mesh flags as MeshRuntimeOptions; errors name the flag.
absl::StatusOr<MeshRuntimeOptions> MeshOptionsFrom(const Flags& flags) {
  MeshRuntimeOptions o;
  if (!flags.mesh_dns.empty() && !flags.mesh_inventory.empty()) {
    return absl::InvalidArgumentError("--mesh-dns and --mesh-inventory: give one membership source, not both");
  }
  o.inventory_path = flags.mesh_inventory;
  if (!flags.mesh_dns.empty()) {
    ASSIGN_OR_RETURN(auto dns, ParseMeshDns(flags.mesh_dns));
    o.dns_name = dns.first;
    o.dns_port = dns.second;
  }
  ASSIGN_OR_RETURN(o.prober.schedule.dscps, ParseMeshDscps(flags.mesh_dscps));
  o.prober.results.window = flags.mesh_window;
  if (absl::Status s = mesh::MeshProber::Create("check", o.prober).status(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--mesh-window: ", s.message()));
  }
  return o;
}

// --dcb-fixture stands in for a kernel that is not there: with the live
// /sys the kernel is there, and a DCB view that is not its own would be
// planned against and shown as the node's.
absl::Status CheckDcbFixture(const Flags& flags, const hal::Paths& paths) {
  if (flags.dcb_fixture.empty()) return absl::OkStatus();
  if (paths.IsLiveSysfs()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--dcb-fixture is for a fixture tree: with the live ", paths.sysfs,
        " the node's DCB state is the kernel's (give --sysfs-root a fixture tree, or drop --dcb-fixture)"));
  }
  if (!std::filesystem::is_directory(flags.dcb_fixture)) {
    return absl::InvalidArgumentError(absl::StrCat("--dcb-fixture ", flags.dcb_fixture, ": not a directory"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DaemonOptions> DaemonOptionsFromFlags(const Flags& flags) {
  DaemonOptions o;
  o.paths = PathsFrom(flags);
  RETURN_IF_ERROR(CheckDcbFixture(flags, o.paths));
  o.dcb_fixture = flags.dcb_fixture;
  o.agent = AgentOptionsFrom(flags);
  ASSIGN_OR_RETURN(o.server, ServerOptionsFrom(flags));
  ASSIGN_OR_RETURN(o.mesh, MeshOptionsFrom(flags));
  o.probes = ProbeOptionsFrom(flags, o.server);
  return o;
}

}  // namespace roced::agent

#include "agent/flags.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "model/defaults.h"

namespace roced::agent {

namespace {

// The fleet mesh's flags.
void RegisterMeshFlags(Flags* f, util::ArgParser* p) {
  p->AddString("mesh-inventory", &f->mesh_inventory, "FILE",
               "Run the fleet mesh: probe the peers this node's pinglist picks from the members "
               "listed in FILE (one a line: NAME ADDRESS [TOR [POD]]; read again when it changes) "
               "over UD queue pairs, answer their probes, and serve ListMeshResults and the "
               "roced_mesh_* metrics. This node is the member named as its hostname. Empty "
               "(default): no mesh.");
  p->AddString("mesh-dns", &f->mesh_dns, "NAME:PORT",
               "Run the fleet mesh with the members a DNS name resolves to (every address, e.g. a "
               "Kubernetes headless Service over the DaemonSet), re-resolved every 15 s; each "
               "address's ProbePeer.Describe says its node name, ToR and pod (cached 5 min). "
               "Instead of --mesh-inventory.");
  p->AddDuration("mesh-window", &f->mesh_window, "DUR",
                 "The sliding window the mesh's loss and round trips are taken over (1s..1h, in "
                 "6 steps).");
  p->AddString("mesh-dscps", &f->mesh_dscps, "LIST",
               "DSCPs the mesh's probes rotate through, comma-separated (at most 8, each 0..63): "
               "a class dropped on a path shows only when more than one is probed. The default "
               "is RoCE's.");
}

// Where the node's kernel files are (a fixture tree in tests and demos).
void RegisterRootFlags(Flags* f, util::ArgParser* p) {
  p->AddString("sysfs-root", &f->sysfs_root, "DIR",
               "Root of sysfs. Point it at a fixture tree to run without hardware; libibverbs is "
               "used only when this is /sys.");
  p->AddString("procfs-root", &f->procfs_root, "DIR", "Root of procfs.");
  p->AddString("configfs-root", &f->configfs_root, "DIR",
               "Root of configfs (rdma_cm default RoCE mode and ToS).");
  p->AddString("debugfs-root", &f->debugfs_root, "DIR",
               "Root of debugfs (upstream mlx5 congestion-control parameters).");
  p->AddString("dcb-fixture", &f->dcb_fixture, "DIR",
               "With a fixture --sysfs-root only (tests, demos): each netdev's DCB state (PFC, ETS, "
               "the DSCP app table, buffers, DCBX mode) is read from DIR/<netdev> instead of DCB "
               "netlink, and writes to it are refused; a netdev without a file has no DCB. The "
               "format: tests/fixtures/README.md.");
}

}  // namespace

void RegisterFlags(Flags* f, util::ArgParser* p) {
  p->AddString("config", &f->config, "FILE",
               "Desired node configuration (YAML, apiVersion: roced/v1, kind: NodeConfig). A "
               "file that fails validation stops start-up with an error naming the line, column "
               "and field. If the default path does not exist the agent starts without desired "
               "state; an explicitly given path must exist.");
  p->AddString("grpc-listen", &f->grpc_listen, "ADDR",
               "TCP address for the gRPC API (roced.v1.Agent, roced.v1.ProbePeer, "
               "grpc.health.v1). Served only with mutual TLS (--tls-cert, --tls-key, "
               "--tls-client-ca) or --insecure; without either the default address is not "
               "opened (the unix socket still is) and an explicit one is a start-up error. "
               "Empty disables TCP.");
  p->AddString("tls-cert", &f->tls_cert, "FILE",
               "PEM certificate of the TCP listener, also sent as the client certificate when "
               "this agent calls peer agents (give it the peer role in the peers' access file). "
               "Reloaded within 70 s when the file changes.");
  p->AddString("tls-key", &f->tls_key, "FILE", "PEM private key of --tls-cert (reloaded with it).");
  p->AddString("tls-client-ca", &f->tls_client_ca, "FILE",
               "PEM CA bundle that client certificates must chain to; also verifies peer agents' "
               "certificates. A caller without a certificate, with one of another CA or with an "
               "expired one fails the TLS handshake.");
  p->AddString("access-file", &f->access_file, "FILE",
               "Access policy (YAML, kind: AccessPolicy): the roles (viewer, operator, admin, "
               "peer) of certificate identities (SAN DNS/URI or CN, '*' wildcards), of unix "
               "socket callers and of --insecure callers. Without it every certificate the CA "
               "vouches for is a viewer, root and --socket-group are admins on the socket, and "
               "nobody else has a role. Never part of the node config.");
  p->AddBool("insecure", &f->insecure,
             "Serve --grpc-listen as plaintext without authentication (tests, labs): every caller "
             "there gets the access policy's insecure_roles (default admin and peer). Only on a "
             "loopback address unless --insecure-allow-remote is also given. Warned about at "
             "start and in GetState.");
  p->AddBool("insecure-allow-remote", &f->insecure_allow_remote,
             "With --insecure, allow a non-loopback --grpc-listen: anyone who reaches the port "
             "can change the node.");
  p->AddBool("grpc-reflection", &f->grpc_reflection,
             "Serve gRPC server reflection (grpcurl without .proto files) on every listener. Off "
             "by default.");
  p->AddString("metrics-listen", &f->metrics_listen, "ADDR",
               "Address of /metrics and /readyz (as `rocectl ready`: 200 or 503 with the checks). [::]:PORT: "
               "every address (IPv4 only, IPv6 ones refused, with Debian 12's civetweb: no IPv6). Empty disables it.");
  p->AddString("web.config.file", &f->web_config_file, "FILE",
               "TLS and basic authentication for the Prometheus endpoint, in the web config "
               "format of node_exporter (tls_server_config: cert_file, key_file, "
               "client_auth_type, client_ca_file, min_version, max_version; basic_auth_users: "
               "user: bcrypt hash). Relative paths are taken from the file's directory. An "
               "unknown key or a value roced cannot honour stops start-up with an error naming "
               "the field and the allowed values; an empty file means plain HTTP. Certificate, "
               "key and CA files are re-read when they change (checked every 2 s during "
               "handshakes); changes to this file itself take a restart. Not set: plain HTTP, "
               "no authentication.");
  p->AddString("socket", &f->socket, "PATH",
               "Local unix socket for the gRPC API, used by rocectl by default (mode 0660, 0666 "
               "when the access policy gives others a role). Callers are identified by their "
               "process credentials (SO_PEERCRED). Empty disables it.");
  p->AddString("socket-group", &f->socket_group, "GROUP",
               "Group owning the unix socket; its members and root get the access policy's "
               "socket.group_roles (default admin). Default: root's group.");
  p->AddString("state-dir", &f->state_dir, "DIR",
               "Directory for the agent's persistent state (accepted desired config and its "
               "generation, audit logs, probe baselines) and, in tls/ (0700), the checked copies of "
               "the --tls-* files gRPC reads (a temporary directory when it is not writable).");
  RegisterMeshFlags(f, p);
  RegisterRootFlags(f, p);
  p->AddString("log-level", &f->log_level, "LEVEL", "One of debug, info, warning, error.");
  p->AddDuration("discovery-interval", &f->discovery_interval, "DUR",
                 "Periodic device re-discovery, the backstop behind netlink events and RDMA "
                 "device uevents, which trigger one at once.");
  p->AddBool("check-config", &f->check_config,
             "Validate --config, print the problems found (or nothing) and exit: 0 when valid, "
             "1 when not. Changes nothing.");
  p->AddBool("version", &f->version, "Print version and git commit, then exit.");
  p->AddBool("help", &f->help, "Print this help, then exit.", 'h');
}

std::string HelpText(const util::ArgParser& parser) {
  return absl::StrCat(
      "NAME\n"
      "    roced - RoCE node agent: declarative NIC QoS state, RDMA probes, counters\n"
      "\n"
      "SYNOPSIS\n"
      "    roced [--config FILE] [--grpc-listen ADDR] [--metrics-listen ADDR]\n"
      "          [--web.config.file FILE] [--socket PATH] [--state-dir DIR]\n"
      "          [--sysfs-root DIR] [OPTION]...\n"
      "\n"
      "DESCRIPTION\n"
      "    roced runs on every server with RoCE NICs. It discovers RDMA devices (RDMA\n"
      "    device -> netdev -> PCI function, ports, GID table with RoCE v1/v2 types,\n"
      "    firmware, NUMA node, PCIe link width and speed), keeps their verbs contexts\n"
      "    open, and serves the node's state over gRPC (TCP and a local unix socket)\n"
      "    and a Prometheus endpoint. Use rocectl(1) to talk to it.\n"
      "\n"
      "OPTIONS\n",
      parser.Help(),
      "\n"
      "SIGNALS\n"
      "    SIGHUP    reload --config; a file that fails validation is rejected with\n"
      "              its errors logged and the previous config stays in force.\n"
      "              --web.config.file is not re-read (restart for changes to it);\n"
      "              the certificate, key and CA files it names are re-read by\n"
      "              themselves once changed.\n"
      "    SIGTERM, SIGINT\n"
      "              stop gracefully: finish calls in flight (up to 5 s), close verbs\n"
      "              contexts, remove the unix socket.\n"
      "\n"
      "SYSTEMD\n"
      "    Under Type=notify, READY=1 is sent once discovery ran and both endpoints\n"
      "    listen; with WatchdogSec set, WATCHDOG=1 is sent at half that interval.\n"
      "\n"
      "FILES\n",
      absl::StrFormat("    %-24s default config\n", model::defaults::kConfigPath),
      absl::StrFormat("    %-24s default state directory\n", absl::StrCat(model::defaults::kStateDir, "/")),
      absl::StrFormat("    %-24s default local API socket\n", model::defaults::kSocketPath),
      absl::StrFormat("    %-24s the calls that changed the node (JSON lines, rotated\n",
                      absl::StrCat(model::defaults::kStateDir, "/audit.log")),
      "                             to audit.log.1 at 16 MiB; no age limit)\n",
      absl::StrFormat("    %-24s refused calls, aggregated per caller, method and code\n",
                      absl::StrCat(model::defaults::kStateDir, "/refusals.log")),
      "                             per 60 s (rotated at 4 MiB; 30 days)\n"
      "    deploy/examples/web-config.yaml\n"
      "                             example --web.config.file (TLS, client\n"
      "                             certificates, basic auth)\n"
      "\n"
      "EXIT STATUS\n"
      "    0 on a clean stop, 1 on a start-up error (bad config, address in use),\n"
      "    2 on a command-line usage error.\n"
      "\n"
      "EXAMPLES\n"
      "    Run on a checked-in fixture tree without hardware:\n"
      "        roced --sysfs-root tests/fixtures/sysfs --config deploy/examples/minimal.yaml \\\n"
      "              --grpc-listen 127.0.0.1:", model::defaults::kGrpcPort, " --insecure --metrics-listen 127.0.0.1:",
      model::defaults::kMetricsPort, " \\\n"
      "              --socket /tmp/roced.sock --state-dir /tmp/roced\n"
      "    With mutual TLS and an access policy:\n"
      "        roced --tls-cert /etc/roced/tls/node.crt --tls-key /etc/roced/tls/node.key \\\n"
      "              --tls-client-ca /etc/roced/tls/ca.crt --access-file /etc/roced/access.yaml\n"
      "    Serve /metrics over HTTPS with basic authentication:\n"
      "        htpasswd -nbBC 10 prometheus SECRET    # prometheus:$2y$10$...\n"
      "        roced --web.config.file /etc/roced/web-config.yaml\n"
      "        curl --cacert ca.crt -u prometheus:SECRET https://NODE:", model::defaults::kMetricsPort, "/metrics\n"
      "    Check a config file:\n"
      "        roced --check-config --config ", model::defaults::kConfigPath, "\n");
}

}  // namespace roced::agent

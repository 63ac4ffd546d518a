#include "agent/flags.h"

#include "absl/strings/str_cat.h"

namespace roced::agent {

void RegisterFlags(Flags* f, util::ArgParser* p) {
  p->AddString("config", &f->config, "FILE",
               "Desired node configuration (YAML, apiVersion: roced/v1, kind: NodeConfig). A "
               "file that fails validation stops start-up with an error naming the line, column "
               "and field. If the default path does not exist the agent starts without desired "
               "state; an explicitly given path must exist.");
  p->AddString("grpc-listen", &f->grpc_listen, "ADDR",
               "TCP address for the gRPC API (roced.v1.Agent, roced.v1.ProbePeer, "
               "grpc.health.v1, reflection). Empty disables TCP.");
  p->AddString("metrics-listen", &f->metrics_listen, "ADDR",
               "Address of the Prometheus endpoint (/metrics). [::]:PORT listens on every IPv4 "
               "and IPv6 address. Empty disables it.");
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
               "Local unix socket for the gRPC API, used by rocectl by default (mode 0660). "
               "Empty disables it.");
  p->AddString("state-dir", &f->state_dir, "DIR",
               "Directory for the agent's persistent state (accepted desired config and its "
               "generation).");
  p->AddString("sysfs-root", &f->sysfs_root, "DIR",
               "Root of sysfs. Point it at a fixture tree to run without hardware; libibverbs is "
               "used only when this is /sys.");
  p->AddString("procfs-root", &f->procfs_root, "DIR", "Root of procfs.");
  p->AddString("configfs-root", &f->configfs_root, "DIR",
               "Root of configfs (rdma_cm default RoCE mode and ToS).");
  p->AddString("debugfs-root", &f->debugfs_root, "DIR",
               "Root of debugfs (upstream mlx5 congestion-control parameters).");
  p->AddString("log-level", &f->log_level, "LEVEL", "One of debug, info, warning, error.");
  p->AddDuration("discovery-interval", &f->discovery_interval, "DUR",
                 "Periodic device re-discovery, the backstop behind netlink events.");
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
      "FILES\n"
      "    /etc/roced/roced.yaml    default config\n"
      "    /var/lib/roced/          default state directory\n"
      "    /run/roced/roced.sock    default local API socket\n"
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
      "              --grpc-listen 127.0.0.1:7471 --metrics-listen 127.0.0.1:9471 \\\n"
      "              --socket /tmp/roced.sock --state-dir /tmp/roced\n"
      "    Serve /metrics over HTTPS with basic authentication:\n"
      "        htpasswd -nbBC 10 prometheus SECRET    # prometheus:$2y$10$...\n"
      "        roced --web.config.file /etc/roced/web-config.yaml\n"
      "        curl --cacert ca.crt -u prometheus:SECRET https://NODE:9471/metrics\n"
      "    Check a config file:\n"
      "        roced --check-config --config /etc/roced/roced.yaml\n");
}

}  // namespace roced::agent

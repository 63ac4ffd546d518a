// roced's command-line flags, registered in one place so main() and the
// deploy manifest test see the same set.
#pragma once

#include <string>

#include "absl/time/time.h"
#include "util/args.h"

namespace roced::agent {

struct Flags {
  std::string config = "/etc/roced/roced.yaml";
  std::string grpc_listen = "[::]:7471";
  std::string metrics_listen = "[::]:9471";
  std::string web_config_file;
  std::string socket = "/run/roced/roced.sock";
  std::string socket_group;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  std::string access_file;
  bool insecure = false;
  bool insecure_allow_remote = false;
  bool grpc_reflection = false;
  std::string state_dir = "/var/lib/roced";
  std::string sysfs_root = "/sys";
  std::string procfs_root = "/proc";
  std::string configfs_root = "/sys/kernel/config";
  std::string debugfs_root = "/sys/kernel/debug";
  std::string log_level = "info";
  std::string mesh_inventory;
  std::string mesh_dns;
  absl::Duration mesh_window = absl::Seconds(60);
  std::string mesh_dscps = "26";
  absl::Duration discovery_interval = absl::Seconds(60);
  bool check_config = false;
  bool version = false;
  bool help = false;
};

void RegisterFlags(Flags* flags, util::ArgParser* parser);

// The full --help text (man-page layout).
std::string HelpText(const util::ArgParser& parser);

}  // namespace roced::agent

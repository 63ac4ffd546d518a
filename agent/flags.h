// roced's command-line flags, registered in one place so main() and the
// deploy manifest test see the same set.
#pragma once

#include <string>

#include "absl/time/time.h"
#include "model/defaults.h"
#include "util/args.h"

namespace roced::agent {

struct Flags {
  std::string config = model::defaults::kConfigPath;
  std::string grpc_listen = model::defaults::kGrpcListen;
  std::string metrics_listen = model::defaults::kMetricsListen;
  std::string web_config_file;
  std::string socket = model::defaults::kSocketPath;
  std::string socket_group;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  std::string access_file;
  bool insecure = false;
  bool insecure_allow_remote = false;
  bool grpc_reflection = false;
  std::string state_dir = model::defaults::kStateDir;
  std::string sysfs_root = model::defaults::kSysfsRoot;
  std::string procfs_root = model::defaults::kProcfsRoot;
  std::string configfs_root = model::defaults::kConfigfsRoot;
  std::string debugfs_root = model::defaults::kDebugfsRoot;
  std::string dcb_fixture;
  std::string log_level = "info";
  std::string mesh_inventory;
  std::string mesh_dns;
  absl::Duration mesh_window = model::defaults::kMeshWindow;
  std::string mesh_dscps = model::defaults::kMeshDscps;
  absl::Duration discovery_interval = model::defaults::kDiscoveryInterval;
  bool check_config = false;
  bool version = false;
  bool help = false;
};

void RegisterFlags(Flags* flags, util::ArgParser* parser);

// The full --help text (man-page layout).
std::string HelpText(const util::ArgParser& parser);

}  // namespace roced::agent

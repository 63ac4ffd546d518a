#include "agent/daemon.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "util/status_macros.h"

namespace roced::agent {

namespace {

// What each part takes from the node and the process, filled into the
// options the caller left unset.
DaemonOptions Complete(DaemonOptions o, const NodeBackends& node, const std::shared_ptr<prometheus::Registry>& registry) {
  o.agent.paths = o.paths;
  if (o.agent.backends.node_io == nullptr) o.agent.backends = node.agent();
  o.agent.registry = registry;
  o.counters.paths = o.paths;
  if (o.counters.netdev_stats == nullptr) o.counters.netdev_stats = node.netdev_stats();
  if (o.counters.dcb == nullptr) o.counters.dcb = node.dcb();
  if (o.counters.link_flaps == nullptr) o.counters.link_flaps = node.link_flaps();
  if (o.probes.factory == nullptr) o.probes.factory = node.endpoints();
  o.probes.registry = registry.get();
  o.probes.sysfs_root = o.paths.sysfs;
  o.probes.procfs_root = o.paths.procfs;
  if (!o.lldp.dcb_read && node.dcb() != nullptr) {
    o.lldp.dcb_read = [dcb = node.dcb()](const std::string& netdev) { return dcb->Get(netdev); };
  }
  if (!node.live()) {
    o.mesh.inventory_path.clear();
    o.mesh.dns_name.clear();
  }
  o.mesh.registry = registry.get();
  o.mesh.procfs_root = o.paths.procfs;
  if (o.mesh.peer_credentials == nullptr) o.mesh.peer_credentials = o.probes.peer_credentials;
  return o;
}

std::shared_ptr<prometheus::Registry> RegistryOf(const DaemonOptions& o) {
  return o.agent.registry != nullptr ? o.agent.registry : std::make_shared<prometheus::Registry>();
}

}  // namespace

Daemon::Daemon(DaemonOptions options)
    : node_(options.paths, options.use_verbs, options.dcb_fixture), registry_(RegistryOf(options)) {
  options_ = Complete(std::move(options), node_, registry_);
  agent_ = std::make_unique<Agent>(options_.agent);
  counters_ = std::make_unique<CountersRuntime>(agent_.get(), options_.counters);
  probes_ = std::make_unique<ProbeRuntime>(agent_.get(), options_.probes);
  if (node_.live()) lldp_ = std::make_unique<LldpRuntime>(agent_.get(), options_.lldp);
  mesh_ = std::make_unique<MeshRuntime>(agent_.get(), lldp_.get(), options_.mesh);
  MeshRuntime* mesh = mesh_->enabled() ? mesh_.get() : nullptr;
  confirm_ = std::make_unique<ConfirmGuard>(
      agent_.get(), ConfirmSources{.counters = counters_.get(), .probes = probes_.get(), .mesh = mesh},
      options_.confirm);
  server_ = std::make_unique<Server>(ServedParts{agent_.get(), counters_.get(), probes_.get(), registry_, lldp_.get(),
                                                 mesh, confirm_.get()},
                                     options_.server);
}

Daemon::~Daemon() { Stop(); }

absl::Status Daemon::Start(bool load_config) {
  // Every flag-level check first: a bad flag must leave the node as it was
  // (under Restart=on-failure a late refusal would re-apply on every start).
  RETURN_IF_ERROR(server_->Preflight());
  if (load_config) {
    if (absl::Status s = agent_->LoadConfig(/*startup=*/true); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("config rejected:\n", s.message()));
    }
  }
  // The agent first (its state is what every runtime reads), the confirm
  // guard after the runtimes it reads, the server last: no call arrives
  // before every part it may reach runs.
  started_ = true;
  agent_->Start();
  counters_->Start();
  probes_->Start();
  if (lldp_ != nullptr) lldp_->Start();
  mesh_->Start();
  confirm_->Start();
  if (absl::Status s = server_->Start(); !s.ok()) {
    StopRuntimes();
    started_ = false;
    return s;
  }
  return absl::OkStatus();
}

void Daemon::Stop(absl::Duration grace) {
  if (!started_) return;
  started_ = false;
  server_->Shutdown(grace);
  StopRuntimes();
}

void Daemon::StopRuntimes() {
  confirm_->Stop();
  mesh_->Stop();
  if (lldp_ != nullptr) lldp_->Stop();
  probes_->Stop();
  counters_->Stop();
  agent_->Stop();
}

}  // namespace roced::agent

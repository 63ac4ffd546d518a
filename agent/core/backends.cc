#include "agent/core/backends.h"

#include "hal/dcb_fixture_files.h"
#include "hal/link_mtu.h"
#include "probe/verbs_endpoint.h"
#include "reconcile/linux_node_io.h"

namespace roced::agent {

NodeBackends::NodeBackends(const hal::Paths& paths, bool use_verbs, const std::string& dcb_fixture)
    : live_(paths.IsLiveSysfs()),
      verbs_(use_verbs && live_),
      link_flaps_(std::make_unique<metrics::LinkFlapHistory>()),
      node_io_(std::make_unique<reconcile::LinuxNodeIo>(
          paths, [flaps = link_flaps_.get()](const std::string& netdev) { flaps->NoteOwnToggle(netdev, absl::Now()); },
          dcb_fixture.empty() ? nullptr : std::make_unique<hal::DcbFixtureFiles>(dcb_fixture),
          // A fixture tree's drivers are its DCB fixture's driver lines,
          // never the host's netdevs of the same names.
          live_ ? std::make_unique<hal::EthtoolInfo>()
          : dcb_fixture.empty() ? nullptr
                                : std::make_unique<hal::DcbFixtureDriverInfo>(dcb_fixture))) {
  if (!live_) return;
  ethtool_ = std::make_unique<hal::EthtoolStats>();
  dcb_ = std::make_unique<hal::DcbNetlink>();
  if (verbs_) endpoints_ = std::make_unique<probe::VerbsEndpointFactory>();
}

AgentBackends NodeBackends::agent() const {
  AgentBackends b;
  b.node_io = node_io_.get();
  if (live_) b.netdev_exists = [](const std::string& netdev) { return hal::LinkMtu().Exists(netdev); };
  b.verbs = verbs_;
  b.qos_view = live_;
  return b;
}

}  // namespace roced::agent

#include "agent/core/device_refresh.h"

#include <vector>

#include "util/log.h"

namespace roced::agent {

bool DeviceRefresh::Run(const std::string& reason) const {
  const absl::Time start = clock_->Monotonic();
  auto devices = discovery_->Discover();
  metrics_->discovery_duration->Observe(absl::ToDoubleSeconds(clock_->Monotonic() - start));
  if (!devices.ok()) {
    metrics_->discovery_runs->Add({{"result", "error"}}).Increment();
    LOG_ERROR << "discovery (" << reason << ") failed: " << devices.status();
    published_->SetComponentHealth("discovery", false, std::string(devices.status().message()));
    return false;
  }
  metrics_->discovery_runs->Add({{"result", "success"}}).Increment();
  std::vector<roced::v1::RdmaDevice> before = published_->SwapDevices(*devices);
  published_->SetComponentHealth("discovery", true, "");
  std::vector<roced::v1::StateEvent> changes = DiffDevices(before, *devices, reason);
  for (auto& ev : changes) {
    LOG_INFO << "device " << ev.device().device() << ": " << roced::v1::DeviceEvent::Kind_Name(ev.device().kind())
             << " (" << ev.device().detail() << ")";
    bus_->Publish(std::move(ev));
  }
  return !changes.empty();
}

}  // namespace roced::agent

#include "agent/core/discovery.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/message_differencer.h"

namespace roced::agent {

absl::StatusOr<std::vector<roced::v1::RdmaDevice>> DeviceDiscovery::Discover() {
  if (use_verbs_) verbs_.Refresh();
  absl::StatusOr<std::vector<roced::v1::RdmaDevice>> devices = sysfs_.Discover();
  if (devices.ok() && use_verbs_) verbs_.Enrich(&*devices);
  return devices;
}

std::vector<roced::v1::StateEvent> DiffDevices(const std::vector<roced::v1::RdmaDevice>& before,
                                               const std::vector<roced::v1::RdmaDevice>& after,
                                               const std::string& reason) {
  std::map<std::string, const roced::v1::RdmaDevice*> old;
  for (const auto& d : before) old[d.name()] = &d;
  std::set<std::string> now;
  std::vector<roced::v1::StateEvent> events;
  for (const auto& d : after) {
    now.insert(d.name());
    auto it = old.find(d.name());
    roced::v1::DeviceEvent ev;
    ev.set_device(d.name());
    if (it == old.end()) {
      ev.set_kind(roced::v1::DeviceEvent::KIND_ADDED);
      ev.set_detail(absl::StrCat(d.ports_size(), " port(s), driver ", d.driver()));
    } else if (!google::protobuf::util::MessageDifferencer::Equals(*it->second, d)) {
      ev.set_kind(roced::v1::DeviceEvent::KIND_CHANGED);
      ev.set_detail(reason);
    } else {
      continue;
    }
    *events.emplace_back().mutable_device() = std::move(ev);
  }
  for (const auto& [name, dev] : old) {
    if (now.count(name)) continue;
    roced::v1::DeviceEvent* ev = events.emplace_back().mutable_device();
    ev->set_kind(roced::v1::DeviceEvent::KIND_REMOVED);
    ev->set_device(name);
    ev->set_detail(absl::StrCat("gone from sysfs (", reason, ")"));
  }
  return events;
}

}  // namespace roced::agent

#include "hal/verbs_devices.h"

#include <set>

#include "util/log.h"

namespace roced::hal {

uint32_t IbMtuToBytes(int mtu) {
  switch (mtu) {
    case IBV_MTU_256: return 256;
    case IBV_MTU_512: return 512;
    case IBV_MTU_1024: return 1024;
    case IBV_MTU_2048: return 2048;
    case IBV_MTU_4096: return 4096;
    default: return 0;
  }
}

namespace {
roced::v1::PortState FromIbvState(ibv_port_state s) {
  switch (s) {
    case IBV_PORT_DOWN: return roced::v1::PORT_STATE_DOWN;
    case IBV_PORT_INIT: return roced::v1::PORT_STATE_INIT;
    case IBV_PORT_ARMED: return roced::v1::PORT_STATE_ARMED;
    case IBV_PORT_ACTIVE: return roced::v1::PORT_STATE_ACTIVE;
    case IBV_PORT_ACTIVE_DEFER: return roced::v1::PORT_STATE_ACTIVE_DEFER;
    default: return roced::v1::PORT_STATE_UNSPECIFIED;
  }
}
}  // namespace

VerbsDevices::~VerbsDevices() { CloseAll(); }

VerbsDevices::Change VerbsDevices::Refresh() {
  Change change;
  int num = 0;
  // ibv_get_device_list re-scans sysfs on every call (rdma-core >= 17), so
  // hot-plugged and removed devices show up here.
  ibv_device** list = ibv_get_device_list(&num);
  std::set<std::string> present;
  std::lock_guard<std::mutex> lock(mu_);
  for (int i = 0; list != nullptr && i < num; ++i) {
    std::string name = ibv_get_device_name(list[i]);
    present.insert(name);
    if (open_.count(name)) continue;
    ibv_context* ctx = ibv_open_device(list[i]);
    if (ctx == nullptr) {
      change.failed.push_back(name);
      LOG_WARNING << "ibv_open_device " << name << " failed: " << strerror(errno);
      continue;
    }
    ibv_device_attr attr;
    uint8_t ports = 1;
    if (ibv_query_device(ctx, &attr) == 0) ports = attr.phys_port_cnt;
    open_[name] = Open{ctx, ports};
    change.opened.push_back(name);
    LOG_INFO << "verbs: opened " << name << " (" << int{ports} << " port(s))";
  }
  for (auto it = open_.begin(); it != open_.end();) {
    if (present.count(it->first)) {
      ++it;
      continue;
    }
    ibv_close_device(it->second.context);
    change.closed.push_back(it->first);
    LOG_INFO << "verbs: closed " << it->first << " (device gone)";
    it = open_.erase(it);
  }
  if (list != nullptr) ibv_free_device_list(list);
  return change;
}

void VerbsDevices::Enrich(std::vector<roced::v1::RdmaDevice>* devices) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& dev : *devices) {
    auto it = open_.find(dev.name());
    if (it == open_.end()) continue;
    dev.set_verbs_open(true);
    for (auto& port : *dev.mutable_ports()) {
      ibv_port_attr attr;
      if (port.number() == 0 || port.number() > 255 ||
          ibv_query_port(it->second.context, static_cast<uint8_t>(port.number()), &attr) != 0) {
        continue;
      }
      port.set_state(FromIbvState(attr.state));
      port.set_active_mtu(IbMtuToBytes(attr.active_mtu));
    }
  }
}

std::vector<std::string> VerbsDevices::OpenDeviceNames() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> names;
  for (const auto& [name, open] : open_) names.push_back(name);
  return names;
}

void VerbsDevices::CloseAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [name, open] : open_) ibv_close_device(open.context);
  open_.clear();
}

}  // namespace roced::hal

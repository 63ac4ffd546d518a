#include "hal/verbs_devices.h"

#include <net/if.h>

#include <algorithm>
#include <cstdio>

#include "hal/sysfs_discovery.h"

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

std::optional<std::vector<roced::v1::Gid>> VerbsDevices::PortGids(const std::string& device,
                                                                  uint32_t port) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = open_.find(device);
  if (it == open_.end() || port == 0 || port > it->second.port_count) return std::nullopt;
  ibv_context* ctx = it->second.context;
  // The table holds every port's entries: room for all of them.
  size_t slots = 0;
  for (uint32_t p = 1; p <= it->second.port_count; ++p) {
    ibv_port_attr attr;
    if (ibv_query_port(ctx, static_cast<uint8_t>(p), &attr) != 0) return std::nullopt;
    slots += static_cast<size_t>(std::max(attr.gid_tbl_len, 0));
  }
  std::vector<ibv_gid_entry> entries(std::max<size_t>(slots, 1));
  const ssize_t n = ibv_query_gid_table(ctx, entries.data(), entries.size(), 0);
  if (n < 0) return std::nullopt;
  std::vector<roced::v1::Gid> out;
  for (ssize_t i = 0; i < n; ++i) {
    const ibv_gid_entry& e = entries[static_cast<size_t>(i)];
    if (e.port_num != port) continue;
    bool zero = true;
    for (uint8_t b : e.gid.raw) zero = zero && b == 0;
    if (zero) continue;
    roced::v1::Gid gid;
    gid.set_index(e.gid_index);
    // As sysfs prints it (%pI6): eight groups of four hex digits.
    char text[40];
    const uint8_t* r = e.gid.raw;
    std::snprintf(text, sizeof(text), "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
                  r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12],
                  r[13], r[14], r[15]);
    gid.set_gid(text);
    switch (e.gid_type) {
      case IBV_GID_TYPE_IB:
        gid.set_type(roced::v1::GID_TYPE_IB);
        break;
      case IBV_GID_TYPE_ROCE_V1:
        gid.set_type(roced::v1::GID_TYPE_ROCE_V1);
        break;
      case IBV_GID_TYPE_ROCE_V2:
        gid.set_type(roced::v1::GID_TYPE_ROCE_V2);
        break;
      default:
        gid.set_type(roced::v1::GID_TYPE_UNSPECIFIED);
    }
    char ifname[IF_NAMESIZE] = {};
    if (e.ndev_ifindex != 0 && if_indextoname(e.ndev_ifindex, ifname) != nullptr) gid.set_netdev(ifname);
    if (e.gid_type != IBV_GID_TYPE_IB) gid.set_ip_address(GidToIp(text));
    out.push_back(std::move(gid));
  }
  std::sort(out.begin(), out.end(),
            [](const roced::v1::Gid& a, const roced::v1::Gid& b) { return a.index() < b.index(); });
  return out;
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

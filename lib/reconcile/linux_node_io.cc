#include "reconcile/linux_node_io.h"

#include <linux/dcbnl.h>

#include "absl/strings/str_cat.h"
#include "model/dcqcn_params.h"
#include "util/log.h"

namespace roced::reconcile {

const hal::DriverProfile& LinuxNodeIo::ProfileOf(const std::string& netdev) const {
  if (info_ == nullptr) return hal::ProfileFor("");
  absl::StatusOr<hal::DriverInfo> info = info_->Driver(netdev);
  return hal::ProfileFor(info.ok() ? info->driver : "");
}

void LinuxNodeIo::NoteResetWrite(const std::string& netdev, bool hal::DriverProfile::Resets::*write) {
  if (on_link_toggle_ && ProfileOf(netdev).resets.*write) on_link_toggle_(netdev);
}

InterfaceObserved LinuxNodeIo::ObserveInterface(const Target& t) {
  InterfaceObserved o;
  if (auto info = info_ != nullptr ? info_->Driver(t.netdev) : absl::NotFoundError("no driver source");
      info.ok()) {
    o.driver = info->driver;
    o.driver_version = info->version;
    o.firmware_version = info->firmware_version;
  }
  if (auto mtu = link_.Get(t.netdev); mtu.ok()) o.mtu = *mtu;
  if (auto dcb = dcb_->Get(t.netdev); dcb.ok()) {
    DscpMap m;
    for (const auto& app : dcb->apps) {
      if (app.selector == hal::kAppSelectorDscp && app.protocol < 64) {
        m[static_cast<uint8_t>(app.protocol)] = app.priority;
      }
    }
    o.dscp = m;
    if (dcb->ets) {
      Ets e;
      e.prio_tc = dcb->ets->prio_tc;
      e.tc_bw = dcb->ets->tc_tx_bw;
      e.tsa = dcb->ets->tc_tsa;
      o.ets = e;
      o.dcb_willing = dcb->ets->willing;
    }
    if (dcb->pfc) {
      o.pfc = Pfc{dcb->pfc->pfc_en, dcb->pfc->delay};
      o.pfc_cap = dcb->pfc->pfc_cap;
    }
    if (dcb->dcbx) o.dcbx_host = hal::DcbxHostMode(*dcb->dcbx);
    if (dcb->buffer) o.buffer = PortBuffer{dcb->buffer->prio2buffer, dcb->buffer->buffer_size, dcb->buffer->total_size};
  } else if (!absl::IsUnimplemented(dcb.status())) {
    LOG_DEBUG << "DCB read of " << t.netdev << ": " << dcb.status();
  }
  if (auto np = ecn_.Get(t.netdev, hal::EcnRole::kNotificationPoint); np.ok()) o.ecn_np = *np;
  if (auto rp = ecn_.Get(t.netdev, hal::EcnRole::kReactionPoint); rp.ok()) o.ecn_rp = *rp;
  if (auto tout = tunable_.GetPfcPreventionTimeout(t.netdev); tout.ok()) o.pfc_prevention = *tout;
  for (const model::DcqcnParam& p : model::kDcqcnParams) {
    const hal::EcnRole role = p.notification_point ? hal::EcnRole::kNotificationPoint : hal::EcnRole::kReactionPoint;
    if (auto v = congestion_.Get(t.netdev, role, p.name); v.ok()) o.dcqcn[p.name] = *v;
  }
  if (!t.rdma_device.empty()) {
    if (auto mode = rdma_cm_.GetRoceMode(t.rdma_device, t.port); mode.ok()) {
      if (*mode == "RoCE v2") o.roce_mode = roced::v1::ROCE_MODE_V2;
      else if (*mode == "IB/RoCE v1") o.roce_mode = roced::v1::ROCE_MODE_V1;
    }
    if (auto tos = rdma_cm_.GetRoceTos(t.rdma_device, t.port); tos.ok()) o.roce_tos = *tos;
  }
  return o;
}

std::optional<uint64_t> LinuxNodeIo::ObserveHugepages(const HugepagePool& pool) {
  auto n = hugepages_.Get(pool.size_kb, pool.numa_node);
  if (!n.ok()) return std::nullopt;
  return *n;
}

absl::Status LinuxNodeIo::SetHugepages(const HugepagePool& pool, uint64_t count) {
  return hugepages_.Set(pool.size_kb, pool.numa_node, count);
}

absl::Status LinuxNodeIo::SetMtu(const Target& t, uint32_t mtu) { return link_.Set(t.netdev, mtu); }

absl::Status LinuxNodeIo::SetDcbxHost(const Target& t, bool host) {
  return dcb_->SetDcbx(t.netdev, host ? DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE : 0);
}

absl::Status LinuxNodeIo::SetDscp(const Target& t, const DscpMap& have, const DscpMap& want) {
  std::vector<hal::DcbApp> add, remapped, removed;
  for (const auto& [dscp, prio] : want) {
    auto it = have.find(dscp);
    if (it == have.end() || it->second != prio) add.push_back({hal::kAppSelectorDscp, prio, dscp});
    if (it != have.end() && it->second != prio) remapped.push_back({hal::kAppSelectorDscp, it->second, dscp});
  }
  for (const auto& [dscp, prio] : have) {
    if (!want.contains(dscp)) removed.push_back({hal::kAppSelectorDscp, prio, dscp});
  }
  const hal::DriverProfile& profile = ProfileOf(t.netdev);
  if (profile.dscp_remap == hal::DscpRemap::kDeleteFirst) return SetDscpDeleteFirst(t, profile, add, remapped, removed);
  // Add before delete: on mlx5 removing the last DSCP entry drops the
  // port to PCP trust, which a remap must not pass through.
  if (absl::Status s = dcb_->AddApps(t.netdev, add); !s.ok()) return s;
  // A remapped DSCP's old entry: mlx5 has already replaced it on add
  // (mlx5e_dcbnl_ieee_setapp deletes the old entry) and refuses to delete
  // it again with ENOENT (mlx5e_dcbnl_ieee_delapp: the priority no longer
  // matches its map); a driver that keeps both needs it deleted. One
  // request each, because the kernel stops a multi-entry delete at its
  // first error (dcbnl_ieee_del) and would leave the rest behind.
  for (const hal::DcbApp& old : remapped) {
    absl::Status s = dcb_->DelApps(t.netdev, {old});
    if (!s.ok() && !absl::IsNotFound(s)) return s;
  }
  return dcb_->DelApps(t.netdev, removed);
}

absl::Status LinuxNodeIo::SetEts(const Target& t, const Ets& want) {
  // Read-modify-write: the attribute carries more than roced manages
  // (willing, CBS, the reco table), which must stay as they are.
  auto current = dcb_->Get(t.netdev);
  if (!current.ok()) return current.status();
  hal::DcbEts e = current->ets.value_or(hal::DcbEts{});
  e.prio_tc = want.prio_tc;
  e.tc_tx_bw = want.tc_bw;
  e.tc_tsa = want.tsa;
  NoteResetWrite(t.netdev, &hal::DriverProfile::Resets::ets);
  return dcb_->SetEts(t.netdev, e);
}

absl::Status LinuxNodeIo::SetPfc(const Target& t, const Pfc& want) {
  auto current = dcb_->Get(t.netdev);
  if (!current.ok()) return current.status();
  hal::DcbPfc p = current->pfc.value_or(hal::DcbPfc{});
  // mlx5 toggles the link on a pfc_en change; some drivers reset the
  // netdev on any PFC write: one note either way.
  if (on_link_toggle_ && (p.pfc_en != want.enabled || ProfileOf(t.netdev).resets.pfc)) on_link_toggle_(t.netdev);
  p.pfc_en = want.enabled;
  p.delay = want.delay;
  return dcb_->SetPfc(t.netdev, p);
}

absl::Status LinuxNodeIo::SetDscpDeleteFirst(const Target& t, const hal::DriverProfile& profile,
                                             const std::vector<hal::DcbApp>& add,
                                             const std::vector<hal::DcbApp>& remapped,
                                             const std::vector<hal::DcbApp>& removed) {
  // bnxt_en and ice (hal::DscpRemap::kDeleteFirst): the DSCPs new to the
  // table first, so a remap of one entry among others never empties it
  // (ice returns to L2 VLAN mode and its default ETS and PFC when it is
  // emptied); then each remapped DSCP deleted and added back; the removed
  // ones last. One request each: the kernel stops a multi-entry request
  // at its first error.
  std::vector<hal::DcbApp> fresh, moved;
  for (const hal::DcbApp& a : add) {
    bool is_remap = false;
    for (const hal::DcbApp& old : remapped) is_remap |= old.protocol == a.protocol;
    (is_remap ? moved : fresh).push_back(a);
  }
  // Each write may reset the netdev (ice: every app change): each noted,
  // from the profile read once for the whole map.
  auto note = [&] {
    if (on_link_toggle_ && profile.resets.app) on_link_toggle_(t.netdev);
  };
  auto add_one = [&](const hal::DcbApp& a) {
    note();
    return dcb_->AddApps(t.netdev, {a});
  };
  auto del_one = [&](const hal::DcbApp& a) {
    note();
    return dcb_->DelApps(t.netdev, {a});
  };
  for (const hal::DcbApp& a : fresh) {
    if (absl::Status s = add_one(a); !s.ok()) return s;
  }
  for (const hal::DcbApp& old : remapped) {
    if (absl::Status s = del_one(old); !s.ok() && !absl::IsNotFound(s)) return s;
    for (const hal::DcbApp& a : moved) {
      if (a.protocol != old.protocol) continue;
      if (absl::Status s = add_one(a); !s.ok()) return s;
    }
  }
  for (const hal::DcbApp& r : removed) {
    if (absl::Status s = del_one(r); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status LinuxNodeIo::SetEcn(const Target& t, hal::EcnRole role, uint8_t from, uint8_t to) {
  return ecn_.Set(t.netdev, role, from, to);
}

absl::Status LinuxNodeIo::SetRoceMode(const Target& t, roced::v1::RoceMode mode) {
  return rdma_cm_.SetRoceMode(t.rdma_device, t.port, mode == roced::v1::ROCE_MODE_V2 ? "RoCE v2" : "IB/RoCE v1");
}

absl::Status LinuxNodeIo::SetRoceTos(const Target& t, uint32_t tos) {
  return rdma_cm_.SetRoceTos(t.rdma_device, t.port, tos);
}

namespace {

// Whether buffer `buf` is lossless under `pfc_en` and `map`: a PFC priority
// maps to it (mlx5's update_buffer_lossy).
bool Lossless(size_t buf, uint8_t pfc_en, const std::array<uint8_t, 8>& map) {
  for (size_t p = 0; p < map.size(); ++p) {
    if (map[p] == buf && (pfc_en & (1u << p)) != 0) return true;
  }
  return false;
}

// The cells mlx5 keeps for the shared buffer (port_update_shared_buffer).
constexpr uint64_t kSharedReserve = 4 * kBufferCellBytes;

// The layouts to write, in order, to go from `have` to `want` under PFC
// `pfc_en`. One, unless the map and the sizes change together and the map
// makes lossless a buffer that grows: mlx5e_port_manual_buffer_config
// checks the new map at the OLD sizes (update_buffer_lossy before the sizes
// are taken), so that buffer, too small before, is refused with ENOMEM
// however large its new size. Then the sizes go first (the buffers lossless
// now kept at least as large), the map second, the sizes as wanted last:
// each write is then one the driver takes when the old layout and the new
// one each are. Not when that intermediate layout does not fit the port.
std::vector<hal::DcbBuffer> BufferWrites(const hal::DcbBuffer& have, const PortBuffer& want, uint8_t pfc_en) {
  hal::DcbBuffer last = have;
  last.prio2buffer = want.prio2buffer;
  last.buffer_size = want.size;
  if (have.prio2buffer == want.prio2buffer) return {last};
  hal::DcbBuffer first = have;
  bool grows = false;
  uint64_t sum = 0;
  for (size_t k = 0; k < want.size.size(); ++k) {
    const bool now = Lossless(k, pfc_en, have.prio2buffer);
    first.buffer_size[k] = now && have.buffer_size[k] > want.size[k] ? have.buffer_size[k] : want.size[k];
    sum += first.buffer_size[k];
    grows |= !now && Lossless(k, pfc_en, want.prio2buffer) && want.size[k] >= uint64_t{have.buffer_size[k]} + kBufferCellBytes;
  }
  if (!grows || sum + kSharedReserve > have.total_size) return {last};
  hal::DcbBuffer second = first;
  second.prio2buffer = want.prio2buffer;
  if (second.buffer_size == last.buffer_size) return {first, second};
  return {first, second, last};
}

}  // namespace

absl::Status LinuxNodeIo::SetBuffer(const Target& t, const PortBuffer& want) {
  auto current = dcb_->Get(t.netdev);
  if (!current.ok()) return current.status();
  hal::DcbBuffer b = current->buffer.value_or(hal::DcbBuffer{});
  // The driver refuses a layout larger than the port with a bare EINVAL;
  // say which figures do not fit instead.
  uint64_t sum = 0;
  for (uint32_t size : want.size) sum += size;
  if (b.total_size != 0 && sum > b.total_size) {
    return absl::InvalidArgumentError(absl::StrCat(t.netdev, ": qos.buffers.size_bytes sum to ", sum,
                                                   " bytes; the port's buffer holds ", b.total_size));
  }
  // The sizes are written as asked: the driver keeps them in whole cells
  // (the field's check and comparison know it, fields.cc).
  for (const hal::DcbBuffer& layout : BufferWrites(b, want, current->pfc ? current->pfc->pfc_en : 0)) {
    if (absl::Status s = dcb_->SetBuffer(t.netdev, layout); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status LinuxNodeIo::SetPfcPrevention(const Target& t, uint16_t timeout_ms) {
  return tunable_.SetPfcPreventionTimeout(t.netdev, timeout_ms);
}

absl::Status LinuxNodeIo::SetDcqcnParam(const Target& t, hal::EcnRole role, const std::string& name,
                                        uint64_t value) {
  return congestion_.Set(t.netdev, role, name, value);
}

}  // namespace roced::reconcile

#include "reconcile/linux_node_io.h"

#include "absl/strings/str_cat.h"
#include "util/log.h"

namespace roced::reconcile {

InterfaceObserved LinuxNodeIo::ObserveInterface(const Target& t) {
  InterfaceObserved o;
  if (auto mtu = link_.Get(t.netdev); mtu.ok()) o.mtu = *mtu;
  if (auto dcb = dcb_.Get(t.netdev); dcb.ok()) {
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
    }
    if (dcb->pfc) o.pfc = Pfc{dcb->pfc->pfc_en, dcb->pfc->delay};
  } else if (!absl::IsUnimplemented(dcb.status())) {
    LOG_DEBUG << "DCB read of " << t.netdev << ": " << dcb.status();
  }
  if (auto np = ecn_.Get(t.netdev, hal::EcnRole::kNotificationPoint); np.ok()) o.ecn_np = *np;
  if (auto rp = ecn_.Get(t.netdev, hal::EcnRole::kReactionPoint); rp.ok()) o.ecn_rp = *rp;
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

absl::Status LinuxNodeIo::Write(const Target* t, const Step& step, const Value& from,
                                const Value& to) {
  auto num = [&](const Value& v) { return std::get<uint64_t>(v); };
  switch (step.field) {
    case Field::kHugepages:
      return hugepages_.Set(step.pool.size_kb, step.pool.numa_node, num(to));
    case Field::kMtu:
      return link_.Set(t->netdev, static_cast<uint32_t>(num(to)));
    case Field::kDscp: {
      const auto& have = std::get<DscpMap>(from);
      const auto& want = std::get<DscpMap>(to);
      std::vector<hal::DcbApp> add, del;
      for (const auto& [dscp, prio] : want) {
        auto it = have.find(dscp);
        if (it == have.end() || it->second != prio) add.push_back({hal::kAppSelectorDscp, prio, dscp});
      }
      for (const auto& [dscp, prio] : have) {
        auto it = want.find(dscp);
        if (it == want.end() || it->second != prio) del.push_back({hal::kAppSelectorDscp, prio, dscp});
      }
      // Add before delete: on mlx5 removing the last DSCP entry drops the
      // port to PCP trust, which a remap must not pass through.
      if (absl::Status s = dcb_.AddApps(t->netdev, add); !s.ok()) return s;
      absl::Status s = dcb_.DelApps(t->netdev, del);
      // A driver that replaces an entry on add (mlx5 keeps one priority per
      // DSCP) has already dropped the old one.
      if (absl::IsNotFound(s)) return absl::OkStatus();
      return s;
    }
    case Field::kEts: {
      auto current = dcb_.Get(t->netdev);
      if (!current.ok()) return current.status();
      hal::DcbEts e = current->ets.value_or(hal::DcbEts{});
      const auto& want = std::get<Ets>(to);
      e.prio_tc = want.prio_tc;
      e.tc_tx_bw = want.tc_bw;
      e.tc_tsa = want.tsa;
      return dcb_.SetEts(t->netdev, e);
    }
    case Field::kPfc: {
      auto current = dcb_.Get(t->netdev);
      if (!current.ok()) return current.status();
      hal::DcbPfc p = current->pfc.value_or(hal::DcbPfc{});
      const auto& want = std::get<Pfc>(to);
      p.pfc_en = want.enabled;
      p.delay = want.delay;
      return dcb_.SetPfc(t->netdev, p);
    }
    case Field::kEcnNp:
      return ecn_.Set(t->netdev, hal::EcnRole::kNotificationPoint,
                           static_cast<uint8_t>(num(from)), static_cast<uint8_t>(num(to)));
    case Field::kEcnRp:
      return ecn_.Set(t->netdev, hal::EcnRole::kReactionPoint,
                           static_cast<uint8_t>(num(from)), static_cast<uint8_t>(num(to)));
    case Field::kRoceMode:
      return rdma_cm_.SetRoceMode(t->rdma_device, t->port,
                                num(to) == roced::v1::ROCE_MODE_V2 ? "RoCE v2" : "IB/RoCE v1");
    case Field::kRoceTos:
      return rdma_cm_.SetRoceTos(t->rdma_device, t->port, static_cast<uint32_t>(num(to)));
  }
  return absl::InternalError("unknown field");
}

}  // namespace roced::reconcile

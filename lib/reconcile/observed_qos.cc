#include "reconcile/observed_qos.h"

#include <string>

#include "hal/driver_profile.h"

namespace roced::reconcile {

namespace {

void AddPriorities(uint8_t mask, google::protobuf::RepeatedField<uint32_t>* out) {
  for (uint32_t p = 0; p < 8; ++p) {
    if (mask & (1u << p)) out->Add(p);
  }
}

// The DCB attributes: one read (DCB_CMD_IEEE_GET) gives the app table and
// whichever of ETS, PFC, buffers and the DCBX mode the driver reports.
void DcbInto(const InterfaceObserved& o, roced::v1::InterfaceQos* q) {
  if (!o.dscp) {
    q->add_unread("dcb");
    return;
  }
  // mlx5 derives trust from the app table (mlx5e_dcbnl_ieee_setapp: the
  // first DSCP entry sets DSCP trust; mlx5e_dcbnl_ieee_delapp: the last one
  // gone sets PCP); the field table writes trust the same way.
  q->set_trust(o.dscp->empty() ? roced::v1::TRUST_PCP : roced::v1::TRUST_DSCP);
  auto* dscp = q->mutable_dscp()->mutable_dscp_to_priority();
  for (const auto& [d, p] : *o.dscp) (*dscp)[d] = p;
  if (o.ets) {
    auto* e = q->mutable_ets();
    for (int k = 0; k < 8; ++k) {
      e->add_priority_to_tc(o.ets->prio_tc[k]);
      e->add_tc_bandwidth(o.ets->tc_bw[k]);
      e->add_tsa(o.ets->tsa[k]);
    }
    if (o.dcb_willing) q->set_ets_willing(*o.dcb_willing);
  } else {
    q->add_unread("ets");
  }
  if (o.pfc) {
    AddPriorities(o.pfc->enabled, q->mutable_pfc()->mutable_priorities());
    q->mutable_pfc()->set_delay(o.pfc->delay);
    if (o.pfc_cap) q->mutable_pfc()->set_capability(*o.pfc_cap);
  } else {
    q->add_unread("pfc");
  }
  if (o.buffer) {
    auto* b = q->mutable_buffers();
    for (int k = 0; k < 8; ++k) {
      b->add_priority_to_buffer(o.buffer->prio2buffer[k]);
      b->add_size_bytes(o.buffer->size[k]);
    }
    q->set_buffer_total_bytes(o.buffer->total_size);
  } else {
    q->add_unread("buffers");
  }
  if (o.dcbx_host) {
    q->set_dcbx_host(*o.dcbx_host);
  } else {
    q->add_unread("dcbx");
  }
}

// What sysfs, debugfs, ethtool and configfs give.
void OthersInto(const InterfaceObserved& o, roced::v1::InterfaceQos* q) {
  if (o.pfc_prevention) {
    q->set_pfc_prevention_ms(*o.pfc_prevention);
  } else {
    q->add_unread("pfc_prevention");
  }
  if (o.ecn_np) {
    AddPriorities(*o.ecn_np, q->mutable_ecn_np()->mutable_priorities());
  } else {
    q->add_unread("ecn_np");
  }
  if (o.ecn_rp) {
    AddPriorities(*o.ecn_rp, q->mutable_ecn_rp()->mutable_priorities());
  } else {
    q->add_unread("ecn_rp");
  }
  if (o.dcqcn.empty()) q->add_unread("dcqcn");
  for (const auto& [name, value] : o.dcqcn) (*q->mutable_dcqcn())[name] = value;
  if (o.roce_mode) {
    q->set_roce_mode(*o.roce_mode);
  } else {
    q->add_unread("roce_mode");
  }
  if (o.roce_tos) {
    q->set_roce_tos(*o.roce_tos);
  } else {
    q->add_unread("roce_tos");
  }
}

// The driver's capabilities on this port: its profile's surfaces, a field
// whose control only some cards or installs have counted as present where
// the node answered for it.
void DriverInto(const Target& port, const InterfaceObserved& o, roced::v1::InterfaceQos* q) {
  const hal::DriverProfile& profile = hal::ProfileFor(o.driver);
  roced::v1::DriverCapability* d = q->mutable_driver();
  d->set_name(o.driver);
  d->set_version(o.driver_version);
  d->set_firmware_version(o.firmware_version);
  d->set_profile(profile.name);
  if (o.dcbx_host == false) {
    d->set_firmware_agent(profile.firmware_agent);
    d->set_firmware_agent_fix(hal::HostModeFix(profile, port.netdev));
  }
  std::vector<std::string> present;
  auto have = [&present](bool here, const char* field) {
    if (here) present.push_back(field);
  };
  have(o.mtu.has_value(), "mtu");
  have(o.dcbx_host.has_value(), "qos.dcbx_mode");
  have(o.dscp.has_value(), "qos.dscp_to_priority");
  have(o.ets.has_value(), "qos.ets");
  have(o.pfc.has_value(), "qos.pfc");
  have(o.buffer.has_value(), "qos.buffers");
  have(o.pfc_prevention.has_value(), "qos.pfc_prevention");
  have(!o.dcqcn.empty(), "qos.dcqcn");
  have(o.ecn_np.has_value() || o.ecn_rp.has_value(), "qos.ecn");
  have(o.roce_mode.has_value(), "roce.default_mode");
  have(o.roce_tos.has_value(), "roce.default_tos");
  for (const hal::FieldSurface& f : hal::FieldSurfaces(profile, present)) {
    roced::v1::FieldCapability* c = d->add_fields();
    c->set_field(f.field);
    c->set_surface(f.surface);
    c->set_manageable(f.manageable);
    c->set_note(f.note);
  }
}

}  // namespace

std::vector<Target> RocePorts(const std::vector<roced::v1::RdmaDevice>& devices) {
  std::vector<Target> ports;
  for (const auto& dev : devices) {
    for (const auto& port : dev.ports()) {
      if (port.link_layer() != "Ethernet" || port.netdev().empty()) continue;
      ports.push_back({0, port.netdev(), dev.name(), port.number()});
    }
  }
  return ports;
}

roced::v1::InterfaceQos ToInterfaceQos(const Target& port, const InterfaceObserved& observed) {
  roced::v1::InterfaceQos q;
  q.set_netdev(port.netdev);
  q.set_rdma_device(port.rdma_device);
  q.set_port(port.port);
  if (observed.mtu) {
    q.set_mtu(*observed.mtu);
  } else {
    q.add_unread("mtu");
  }
  DcbInto(observed, &q);
  OthersInto(observed, &q);
  DriverInto(port, observed, &q);
  return q;
}

std::vector<roced::v1::InterfaceQos> ObserveQos(NodeIo* io, const std::vector<roced::v1::RdmaDevice>& devices) {
  std::vector<roced::v1::InterfaceQos> out;
  for (const Target& port : RocePorts(devices)) out.push_back(ToInterfaceQos(port, io->ObserveInterface(port)));
  return out;
}

}  // namespace roced::reconcile

#include "reconcile/fields.h"

#include <algorithm>
#include <array>
#include <bit>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hal/driver_profile.h"
#include "model/dcqcn_params.h"
#include "reconcile/apply.h"
#include "reconcile/plan.h"

namespace roced::reconcile {

namespace {

using roced::v1::InterfaceConfig;
using roced::v1::PriorValue;

// --- renderings ---------------------------------------------------------

std::string Number(const uint64_t& n) { return absl::StrCat(n); }

std::string Mask(const uint64_t& mask) {
  std::vector<int> prios;
  for (int p = 0; p < 8; ++p) {
    if (mask & (1u << p)) prios.push_back(p);
  }
  return absl::StrCat("[", absl::StrJoin(prios, ","), "]");
}

std::string RoceModeName(const uint64_t& mode) {
  return mode == roced::v1::ROCE_MODE_V2 ? "v2" : mode == roced::v1::ROCE_MODE_V1 ? "v1" : "?";
}

std::string DscpText(const DscpMap& m) {
  if (m.empty()) return "{} (trust pcp)";
  std::vector<std::string> parts;
  for (const auto& [dscp, prio] : m) parts.push_back(absl::StrCat(dscp, ":", prio));
  return absl::StrCat("{", absl::StrJoin(parts, " "), "}");
}

std::string Arr(const std::array<uint8_t, 8>& a) {
  std::vector<int> v(a.begin(), a.end());
  return absl::StrCat("[", absl::StrJoin(v, ","), "]");
}


std::string TsaName(uint8_t tsa) {
  switch (tsa) {
    case 0: return "strict";
    case 1: return "cbs";
    case 2: return "ets";
    case 255: return "vendor";
    default: return absl::StrCat(tsa);
  }
}

std::string EtsText(const Ets& e) {
  std::vector<std::string> tsa;
  for (uint8_t t : e.tsa) tsa.push_back(TsaName(t));
  return absl::StrCat("prio_tc ", Arr(e.prio_tc), " bw ", Arr(e.tc_bw), " tsa [", absl::StrJoin(tsa, ","),
                      "]");
}

std::string PfcText(const Pfc& p) { return absl::StrCat("priorities ", Mask(p.enabled), " delay ", p.delay); }

std::string BufferText(const PortBuffer& b) {
  std::vector<uint32_t> sizes(b.size.begin(), b.size.end());
  return absl::StrCat("prio_buffer ", Arr(b.prio2buffer), " size [", absl::StrJoin(sizes, ","), "]",
                      b.total_size != 0 ? absl::StrCat(" of ", b.total_size) : "");
}

std::string PreventionText(const uint64_t& ms) {
  if (ms == 0) return "disabled";
  if (ms == model::kPfcPreventionAuto) return "auto";
  return absl::StrCat(ms, " ms");
}

// --- config -> kernel values ---------------------------------------------

uint8_t TsaKernel(roced::v1::Tsa tsa) {
  switch (tsa) {
    case roced::v1::TSA_ETS: return 2;
    case roced::v1::TSA_VENDOR: return 255;
    default: return 0;
  }
}

uint8_t MaskOf(const google::protobuf::RepeatedField<uint32_t>& prios) {
  uint8_t m = 0;
  for (uint32_t p : prios) {
    if (p < 8) m |= static_cast<uint8_t>(1u << p);
  }
  return m;
}

// --- journal: one codec per value type --------------------------------------

template <typename T>
struct Codec;

template <>
struct Codec<uint64_t> {
  static constexpr ValueKind kKind = ValueKind::kNumber;
  static void ToPrior(const uint64_t& n, PriorValue* p) { p->set_number(n); }
  static std::optional<uint64_t> FromPrior(const PriorValue& p) {
    if (p.value_case() != PriorValue::kNumber) return std::nullopt;
    return p.number();
  }
};

template <>
struct Codec<DscpMap> {
  static constexpr ValueKind kKind = ValueKind::kDscpMap;
  static void ToPrior(const DscpMap& m, PriorValue* p) {
    auto* out = p->mutable_dscp()->mutable_dscp_to_priority();
    for (const auto& [dscp, prio] : m) (*out)[dscp] = prio;
  }
  static std::optional<DscpMap> FromPrior(const PriorValue& p) {
    if (p.value_case() != PriorValue::kDscp) return std::nullopt;
    DscpMap m;
    for (const auto& [dscp, prio] : p.dscp().dscp_to_priority()) {
      if (dscp > 63 || prio > 7) return std::nullopt;
      m[static_cast<uint8_t>(dscp)] = static_cast<uint8_t>(prio);
    }
    return m;
  }
};

template <>
struct Codec<Ets> {
  static constexpr ValueKind kKind = ValueKind::kEts;
  static void ToPrior(const Ets& e, PriorValue* p) {
    auto* out = p->mutable_ets();
    for (int k = 0; k < 8; ++k) {
      out->add_priority_to_tc(e.prio_tc[k]);
      out->add_tc_bandwidth(e.tc_bw[k]);
      out->add_tsa(e.tsa[k]);
    }
  }
  static std::optional<Ets> FromPrior(const PriorValue& p) {
    const auto& e = p.ets();
    if (p.value_case() != PriorValue::kEts || e.priority_to_tc_size() != 8 ||
        e.tc_bandwidth_size() != 8 || e.tsa_size() != 8) {
      return std::nullopt;
    }
    Ets out;
    for (int k = 0; k < 8; ++k) {
      out.prio_tc[k] = static_cast<uint8_t>(e.priority_to_tc(k));
      out.tc_bw[k] = static_cast<uint8_t>(e.tc_bandwidth(k));
      out.tsa[k] = static_cast<uint8_t>(e.tsa(k));
    }
    return out;
  }
};

template <>
struct Codec<Pfc> {
  static constexpr ValueKind kKind = ValueKind::kPfc;
  static void ToPrior(const Pfc& f, PriorValue* p) {
    p->mutable_pfc()->set_enabled(f.enabled);
    p->mutable_pfc()->set_delay(f.delay);
  }
  static std::optional<Pfc> FromPrior(const PriorValue& p) {
    if (p.value_case() != PriorValue::kPfc || p.pfc().enabled() > 0xff || p.pfc().delay() > 0xffff) {
      return std::nullopt;
    }
    return Pfc{static_cast<uint8_t>(p.pfc().enabled()), static_cast<uint16_t>(p.pfc().delay())};
  }
};

template <>
struct Codec<PortBuffer> {
  static constexpr ValueKind kKind = ValueKind::kBuffer;
  static void ToPrior(const PortBuffer& b, PriorValue* p) {
    auto* out = p->mutable_buffer();
    for (int k = 0; k < 8; ++k) {
      out->add_priority_to_buffer(b.prio2buffer[k]);
      out->add_size_bytes(b.size[k]);
    }
  }
  static std::optional<PortBuffer> FromPrior(const PriorValue& p) {
    const auto& b = p.buffer();
    if (p.value_case() != PriorValue::kBuffer || b.priority_to_buffer_size() != 8 || b.size_bytes_size() != 8) {
      return std::nullopt;
    }
    PortBuffer out;
    for (int k = 0; k < 8; ++k) {
      if (b.priority_to_buffer(k) > 7) return std::nullopt;
      out.prio2buffer[k] = static_cast<uint8_t>(b.priority_to_buffer(k));
      out.size[k] = b.size_bytes(k);
    }
    return out;
  }
};

// --- typed entries ----------------------------------------------------------

// One field with its value type T spelled out; Erase() turns it into the
// table's FieldSpec (Values in, Values out).
template <typename T>
struct Entry {
  Field field;
  const char* path;
  Scope scope;
  bool disruptive = false;
  bool partial = false;
  bool dcbx_owned = false;
  std::function<bool(const InterfaceConfig&)> required = nullptr;
  const char* note = "";
  std::function<bool(const T& observed, const T& wanted)> same = nullptr;
  // Numbers only: the largest value the field holds. A journal entry above
  // it is malformed and ignored, as the other codecs ignore theirs (written
  // back, it would be cut to the setter's type: MTU 2^32+1500 as 1500).
  uint64_t max_number = std::numeric_limits<uint64_t>::max();
  // Null for pool fields.
  std::function<std::optional<T>(const InterfaceConfig&, const InterfaceObserved&)> desired = nullptr;
  std::function<std::optional<T>(const InterfaceObserved*, const std::optional<uint64_t>&)> observe = nullptr;
  std::function<std::string(const T&)> render = nullptr;
  // `from`: nullopt when the value on the node is not known.
  std::function<absl::Status(NodeIo&, const Target*, const HugepagePool&, const std::optional<T>& from,
                             const T& to)>
      write = nullptr;
  // FieldSpec::check, as it is.
  std::function<absl::Status(const Plan&, const Step&, const InterfaceObserved&)> check = nullptr;
};

// Observes the InterfaceObserved member `m` as a T (numbers widen to uint64_t).
template <typename T, typename M>
auto Member(std::optional<M> InterfaceObserved::*m) {
  return [m](const InterfaceObserved* i, const std::optional<uint64_t>&) -> std::optional<T> {
    const std::optional<M>& v = i->*m;
    if (!v) return std::nullopt;
    return static_cast<T>(*v);
  };
}

template <typename T>
std::optional<Value> Wrap(const std::optional<T>& v) {
  if (!v) return std::nullopt;
  return Value(*v);
}

// A journal value, or nullopt when a number is above `max` (other values
// have no such bound).
template <typename T>
std::optional<T> WithinMax(std::optional<T> v, uint64_t max) {
  if constexpr (std::is_same_v<T, uint64_t>) {
    if (v && *v > max) return std::nullopt;
  } else {
    static_cast<void>(max);
  }
  return v;
}

// The type-erased form of an entry's `same` (null stays null).
template <typename T>
std::function<bool(const Value&, const Value&)> SameOf(std::function<bool(const T&, const T&)> same) {
  if (!same) return nullptr;
  return [same = std::move(same)](const Value& observed, const Value& wanted) {
    const T* o = std::get_if<T>(&observed);
    const T* w = std::get_if<T>(&wanted);
    return o != nullptr && w != nullptr && same(*o, *w);
  };
}

template <typename T>
FieldSpec Erase(Entry<T> e) {
  std::function<std::optional<Value>(const InterfaceConfig&, const InterfaceObserved&)> desired;
  if (e.desired) {
    desired = [d = e.desired](const InterfaceConfig& c, const InterfaceObserved& o) {
      return Wrap(d(c, o));
    };
  }
  return FieldSpec{
      .field = e.field,
      .path = e.path,
      .kind = Codec<T>::kKind,
      .scope = e.scope,
      .disruptive = e.disruptive,
      .partial = e.partial,
      .dcbx_owned = e.dcbx_owned,
      .required = e.required,
      .note = e.note,
      .same = SameOf(e.same),
      .desired = std::move(desired),
      .observe = [o = e.observe](const InterfaceObserved* i,
                                 const std::optional<uint64_t>& pages) {
        return Wrap(o(i, pages)).value_or(Value(std::monostate{}));
      },
      .render = [r = e.render](const Value& v) {
        const T* t = std::get_if<T>(&v);
        return t ? r(*t) : std::string("?");
      },
      .to_prior = [](const Value& v, PriorValue* p) {
        if (const T* t = std::get_if<T>(&v)) Codec<T>::ToPrior(*t, p);
      },
      .from_prior = [max = e.max_number](const PriorValue& p) {
        return Wrap(WithinMax(Codec<T>::FromPrior(p), max));
      },
      .write = [w = e.write](NodeIo& io, const Target* t, const HugepagePool& pool, const Value& from,
                             const Value& to) {
        const T* f = std::get_if<T>(&from);
        return w(io, t, pool, f ? std::optional<T>(*f) : std::nullopt, std::get<T>(to));
      },
      .check = std::move(e.check),
  };
}

// --- the entries, in apply order (see Field in state.h for why) -------------

FieldSpec HugepagesField() {
  return Erase<uint64_t>({
      .field = Field::kHugepages,
      .path = "hugepages.count",
      .scope = Scope::kHugepagePool,
      .partial = true,
      .observe = [](const InterfaceObserved*, const std::optional<uint64_t>& pages) { return pages; },
      .render = Number,
      .write = [](NodeIo& io, const Target*, const HugepagePool& pool, const std::optional<uint64_t>&,
                  const uint64_t& to) { return io.SetHugepages(pool, to); },
  });
}

FieldSpec MtuField() {
  return Erase<uint64_t>({
      .field = Field::kMtu,
      .path = "mtu",
      .scope = Scope::kNetdev,
      .disruptive = true,
      .note = "an MTU change can reset the link on some NICs",
      .max_number = std::numeric_limits<uint32_t>::max(),
      .desired = [](const InterfaceConfig& c, const InterfaceObserved&) -> std::optional<uint64_t> {
        if (!c.has_mtu()) return std::nullopt;
        return c.mtu();
      },
      .observe = Member<uint64_t>(&InterfaceObserved::mtu),
      .render = Number,
      .write = [](NodeIo& io, const Target* t, const HugepagePool&, const std::optional<uint64_t>&,
                  const uint64_t& to) { return io.SetMtu(*t, static_cast<uint32_t>(to)); },
  });
}

// The port's DCBX mode, as a number: 1 host, 0 firmware. Managed only when
// the config asks for host mode; the rollback of a failed apply hands the
// port back to the firmware (setdcbx 0).
FieldSpec DcbxModeField() {
  return Erase<uint64_t>({
      .field = Field::kDcbxMode,
      .path = "qos.dcbx_mode",
      .scope = Scope::kNetdev,
      .note = "the NIC's firmware stops running DCBX on this port: roced's PFC, ETS and DSCP map stay as written",
      .max_number = 1,
      .desired = [](const InterfaceConfig& c, const InterfaceObserved&) -> std::optional<uint64_t> {
        if (!c.has_qos() || c.qos().dcbx_mode() != roced::v1::DCBX_MODE_HOST) return std::nullopt;
        return 1;
      },
      .observe = [](const InterfaceObserved* i, const std::optional<uint64_t>&) -> std::optional<uint64_t> {
        if (!i->dcbx_host) return std::nullopt;
        return *i->dcbx_host ? 1 : 0;
      },
      .render = [](const uint64_t& host) -> std::string { return host != 0 ? "host" : "firmware"; },
      .write = [](NodeIo& io, const Target* t, const HugepagePool&, const std::optional<uint64_t>&,
                  const uint64_t& to) { return io.SetDcbxHost(*t, to != 0); },
  });
}

// The DSCP app table, which on upstream mlx5 also decides trust: entries
// mean DSCP trust, none means PCP.
std::optional<DscpMap> DesiredDscp(const InterfaceConfig& c, const InterfaceObserved& obs) {
  if (!c.has_qos()) return std::nullopt;
  const auto& q = c.qos();
  if (q.trust() == roced::v1::TRUST_PCP) return DscpMap{};
  if (q.dscp_to_priority_size() > 0) {
    DscpMap m;
    for (const auto& [dscp, prio] : q.dscp_to_priority()) {
      m[static_cast<uint8_t>(dscp)] = static_cast<uint8_t>(prio);
    }
    return m;
  }
  if (q.trust() == roced::v1::TRUST_DSCP) {
    // Keep whatever map is there, or install the default one if there is none.
    return obs.dscp && !obs.dscp->empty() ? *obs.dscp : DefaultDscpMap();
  }
  return std::nullopt;
}

FieldSpec DscpField() {
  return Erase<DscpMap>({
      .field = Field::kDscp,
      .path = "qos.dscp_to_priority",
      .scope = Scope::kNetdev,
      .dcbx_owned = true,
      .note = "trust follows the DSCP app table: entries mean DSCP trust, none means PCP",
      .desired = DesiredDscp,
      .observe = Member<DscpMap>(&InterfaceObserved::dscp),
      .render = DscpText,
      // Unknown before: add every wanted entry, remove none.
      .write = [](NodeIo& io, const Target* t, const HugepagePool&, const std::optional<DscpMap>& from,
                  const DscpMap& to) { return io.SetDscp(*t, from.value_or(DscpMap{}), to); },
  });
}

std::optional<Ets> DesiredEts(const InterfaceConfig& c, const InterfaceObserved&) {
  if (!c.has_qos() || !c.qos().has_ets()) return std::nullopt;
  const auto& ets = c.qos().ets();
  if (ets.priority_to_tc_size() != 8 || ets.tc_bandwidth_size() != 8 || ets.tsa_size() != 8) return std::nullopt;
  Ets e;
  for (int k = 0; k < 8; ++k) {
    e.prio_tc[k] = static_cast<uint8_t>(ets.priority_to_tc(k));
    e.tc_bw[k] = static_cast<uint8_t>(ets.tc_bandwidth(k));
    e.tsa[k] = TsaKernel(ets.tsa(k));
  }
  return e;
}

// Whether ETS read back from the driver is what was asked for, compared as
// the driver can hold it (nmstate's rule: verify what the user asked for).
// mlx5 (en_dcbnl.c, mlx5e_build_tc_tx_bw and mlx5e_dcbnl_ieee_getets) gives
// strict and vendor classes 100% of the port and reads them back so, and an
// ETS class asked for at 0% shares what the others leave (read back as 0%
// only when the driver can tell it apart). So: the priority map and every
// class's tsa exactly, the bandwidth of the ETS classes given a share.
bool EtsSatisfies(const Ets& observed, const Ets& wanted) {
  if (observed.prio_tc != wanted.prio_tc || observed.tsa != wanted.tsa) return false;
  for (size_t k = 0; k < wanted.tsa.size(); ++k) {
    if (wanted.tsa[k] == kTsaEts && wanted.tc_bw[k] != 0 && observed.tc_bw[k] != wanted.tc_bw[k]) return false;
  }
  return true;
}

FieldSpec EtsField() {
  return Erase<Ets>({
      .field = Field::kEts,
      .path = "qos.ets",
      .scope = Scope::kNetdev,
      .dcbx_owned = true,
      .same = EtsSatisfies,
      .desired = DesiredEts,
      .observe = Member<Ets>(&InterfaceObserved::ets),
      .render = EtsText,
      .write = [](NodeIo& io, const Target* t, const HugepagePool&, const std::optional<Ets>&,
                  const Ets& to) { return io.SetEts(*t, to); },
  });
}

absl::Status CheckPfcOnEts(const Plan& plan, const Step& step, const InterfaceObserved& obs);

FieldSpec PfcField() {
  return Erase<Pfc>({
      .field = Field::kPfc,
      .path = "qos.pfc",
      .scope = Scope::kNetdev,
      .disruptive = true,
      .dcbx_owned = true,
      .note = "mlx5 flaps the link when pfc_en changes",
      // The enabled priorities exactly; the delay (mlx5: the cable length
      // used to size the lossless buffers' headroom) only where the driver
      // keeps one. mlx5e_dcbnl_ieee_getpfc reports it only with port-buffer
      // support (0 without), and mlx5e_dcbnl_ieee_setpfc ignores 0 and
      // anything from 1000 m up.
      .same = [](const Pfc& observed, const Pfc& wanted) {
        return observed.enabled == wanted.enabled &&
               (observed.delay == wanted.delay || observed.delay == 0 || wanted.delay == 0 || wanted.delay >= 1000);
      },
      .desired = [](const InterfaceConfig& c, const InterfaceObserved& obs) -> std::optional<Pfc> {
        if (!c.has_qos() || !c.qos().has_pfc()) return std::nullopt;
        const auto& pfc = c.qos().pfc();
        // No delay in the config: keep the node's.
        const uint16_t keep = obs.pfc ? obs.pfc->delay : 0;
        // A driver whose delay is the port's own (ice reads a register a
        // write does not change): the node's, whatever the config says.
        const bool settable = !hal::ProfileFor(obs.driver).pfc_delay_is_port_own;
        return Pfc{MaskOf(pfc.priorities()), pfc.has_delay() && settable ? static_cast<uint16_t>(pfc.delay()) : keep};
      },
      .observe = Member<Pfc>(&InterfaceObserved::pfc),
      .render = PfcText,
      .write = [](NodeIo& io, const Target* t, const HugepagePool&, const std::optional<Pfc>&,
                  const Pfc& to) { return io.SetPfc(*t, to); },
      .check = CheckPfcOnEts,
  });
}

// One end of DCQCN: `np` the notification point, else the reaction point.
FieldSpec EcnField(bool np) {
  const hal::EcnRole role = np ? hal::EcnRole::kNotificationPoint : hal::EcnRole::kReactionPoint;
  return Erase<uint64_t>({
      .field = np ? Field::kEcnNp : Field::kEcnRp,
      .path = np ? "qos.ecn.np_priorities" : "qos.ecn.rp_priorities",
      .scope = Scope::kNetdev,
      // Only MLNX_OFED has the per-priority enables (the inbox mlx5 driver's
      // debugfs cc_params hold DCQCN parameters, no enables:
      // drivers/infiniband/hw/mlx5/cong.c, mlx5_ib_dbg_cc_name).
      .required = [](const InterfaceConfig& c) { return c.qos().ecn().require(); },
      .max_number = 0xff,
      .desired = [np](const InterfaceConfig& c, const InterfaceObserved&) -> std::optional<uint64_t> {
        if (!c.has_qos() || !c.qos().has_ecn()) return std::nullopt;
        return MaskOf(np ? c.qos().ecn().np_priorities() : c.qos().ecn().rp_priorities());
      },
      .observe = Member<uint64_t>(np ? &InterfaceObserved::ecn_np : &InterfaceObserved::ecn_rp),
      .render = Mask,
      // Unknown before: write every priority.
      .write = [role](NodeIo& io, const Target* t, const HugepagePool&, const std::optional<uint64_t>& from,
                      const uint64_t& to) {
        const auto want = static_cast<uint8_t>(to);
        return io.SetEcn(*t, role, from ? static_cast<uint8_t>(*from) : static_cast<uint8_t>(~want), want);
      },
  });
}

// --- the port buffers, as mlx5 holds and checks them ------------------------
// (Linux 6.1 drivers/net/ethernet/mellanox/mlx5/core/en/port_buffer.c; mlx5
// is the only driver with the dcbnl buffer op.)

// A size is read back rounded down to a cell (port_set_buffer divides by the
// cell size, mlx5e_port_query_buffer multiplies): read back within one cell
// below the wanted size, it is what was asked for. The map exactly.
bool BufferSatisfies(const PortBuffer& observed, const PortBuffer& wanted) {
  if (observed.prio2buffer != wanted.prio2buffer) return false;
  for (size_t k = 0; k < wanted.size.size(); ++k) {
    if (observed.size[k] > wanted.size[k] || wanted.size[k] - observed.size[k] >= kBufferCellBytes) return false;
  }
  return true;
}

// mlx5's smallest lossless buffer, xoff + max_mtu + one cell
// (update_xoff_threshold refuses less with ENOMEM), with xoff from
// calculate_xoff: (301 + 2.16 * cable [m]) * speed [Gb/s] + 2.72 * MTU [B].
// Each input roced cannot read is taken at the driver's lowest, so that the
// check never refuses what the driver takes: the speed (not in dcbnl) at
// calculate_xoff's floor, 40 Gb/s; max_mtu (not read) as the MTU, at least
// mlx5's MINIMUM_MAX_MTU 9216 (ConnectX netdevs report 9978).
struct LosslessMinimum {
  uint32_t cable_m = 0;
  uint32_t mtu = 0;  // the netdev's
  uint32_t xoff = 0;
  uint32_t max_mtu = 0;  // the term mlx5 adds for the largest frame
  uint64_t bytes() const { return uint64_t{xoff} + max_mtu + kBufferCellBytes; }
};

constexpr uint32_t kMlx5MinSpeedMbps = 40000;  // calculate_xoff: SPEED_40000 at least
constexpr uint32_t kMlx5MinimumMaxMtu = 9216;  // MINIMUM_MAX_MTU
constexpr uint16_t kMlx5DefaultCableM = 7;     // MLX5E_DEFAULT_CABLE_LEN
constexpr uint16_t kMlx5MaxCableM = 1000;      // MLX5E_MAX_CABLE_LENGTH (exclusive)

LosslessMinimum Mlx5LosslessMinimum(uint32_t cable_m, uint32_t mtu) {
  LosslessMinimum m{.cable_m = cable_m, .mtu = mtu};
  // calculate_xoff's u32 arithmetic (cable < 1000 m, MTU < 65536: no overflow).
  m.xoff = (301 + 216 * cable_m / 100) * kMlx5MinSpeedMbps / 1000 + 272 * mtu / 100;
  m.max_mtu = mtu > kMlx5MinimumMaxMtu ? mtu : kMlx5MinimumMaxMtu;
  return m;
}

// The cable length mlx5 holds once `pfc` is written over a port that
// reports `observed`: mlx5e_dcbnl_ieee_setpfc takes a delay of 1-999 m and
// keeps its own (reported as the delay) for any other.
uint32_t CableInForce(const std::optional<Pfc>& pfc, const std::optional<Pfc>& observed) {
  for (const std::optional<Pfc>& p : {pfc, observed}) {
    if (p && p->delay > 0 && p->delay < kMlx5MaxCableM) return p->delay;
  }
  return kMlx5DefaultCableM;
}

// qos.buffers' pre-write check: every buffer a PFC priority maps to (the PFC
// and MTU the plan writes before the buffers, else the node's) must hold
// mlx5's lossless minimum. The driver would refuse it with ENOMEM only at
// the buffer step, after the PFC step has flapped the link; refused here,
// nothing is written. mlx5 compares the size as given, before rounding.
absl::Status CheckLosslessMinimum(const Plan& plan, const Step& step, const InterfaceObserved& obs) {
  const PortBuffer* want = std::get_if<PortBuffer>(&step.wanted);
  std::optional<Pfc> pfc;
  uint32_t mtu = obs.mtu.value_or(0);
  for (const Step& s : plan.steps) {
    if (s.target != step.target || s.field >= step.field) continue;
    if (const Pfc* p = std::get_if<Pfc>(&s.wanted); p != nullptr && s.field == Field::kPfc) pfc = *p;
    if (const uint64_t* m = std::get_if<uint64_t>(&s.wanted); m != nullptr && s.field == Field::kMtu) {
      mtu = static_cast<uint32_t>(*m);
    }
  }
  const uint32_t cable = CableInForce(pfc, obs.pfc);
  if (!pfc) pfc = obs.pfc;
  if (want == nullptr || !pfc) return absl::OkStatus();
  const LosslessMinimum min = Mlx5LosslessMinimum(cable, mtu);
  for (int p = 0; p < 8; ++p) {
    const uint8_t buf = want->prio2buffer[p];
    if (!(pfc->enabled & (1u << p)) || buf >= want->size.size() || want->size[buf] >= min.bytes()) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        step.object, ": qos.buffers.size_bytes[", buf, "] = ", want->size[buf], " bytes is below the lossless minimum ",
        min.bytes(), " (xoff ", min.xoff, " + MTU ", min.max_mtu, " + one ", kBufferCellBytes, "-byte cell) for priority ",
        p, "'s buffer: mlx5's xoff for a ", min.cable_m, " m cable (the PFC delay) and MTU ", min.mtu, " at ",
        kMlx5MinSpeedMbps / 1000, " Gb/s, its lowest (a faster port needs more)"));
  }
  return absl::OkStatus();
}

// qos.pfc's pre-write check, for drivers whose PFC rides on their ETS
// (hal::DriverProfile::pfc_needs_ets, bnxt_en): setpfc is -EINVAL before
// any ETS was set, and for more lossless traffic classes than pfc_cap
// (bnxt_hwrm_queue_pfc_cfg). With the ETS the plan writes before PFC, else
// the node's; refused here, nothing is written.
absl::Status CheckPfcOnEts(const Plan& plan, const Step& step, const InterfaceObserved& obs) {
  const hal::DriverProfile& profile = hal::ProfileFor(obs.driver);
  const Pfc* want = std::get_if<Pfc>(&step.wanted);
  if (!profile.pfc_needs_ets || want == nullptr || want->enabled == 0) return absl::OkStatus();
  std::optional<Ets> ets = obs.ets;
  bool ets_written = false;
  for (const Step& s : plan.steps) {
    if (s.target != step.target || s.field != Field::kEts) continue;
    if (const Ets* e = std::get_if<Ets>(&s.wanted); e != nullptr) {
      ets = *e;
      ets_written = true;
    }
  }
  // bnxt_en in host mode reads all zeros (every class strict, every
  // priority on TC 0, no bandwidth) until an ETS is set.
  const bool never_set = ets && std::all_of(ets->tc_bw.begin(), ets->tc_bw.end(), [](uint8_t b) { return b == 0; }) &&
                         std::all_of(ets->prio_tc.begin(), ets->prio_tc.end(), [](uint8_t t) { return t == 0; });
  if (!ets || (never_set && !ets_written)) {
    return absl::FailedPreconditionError(absl::StrCat(
        step.object, ": ", profile.name, " takes PFC only once an ETS configuration is set (bnxt_hwrm_queue_pfc_cfg): "
        "add qos.ets to the config"));
  }
  uint32_t tcs = 0;
  for (int p = 0; p < 8; ++p) {
    if (want->enabled & (1u << p)) tcs |= 1u << (ets->prio_tc[p] & 7);
  }
  const int lossless = std::popcount(tcs);
  if (obs.pfc_cap && *obs.pfc_cap > 0 && lossless > *obs.pfc_cap) {
    return absl::InvalidArgumentError(absl::StrCat(
        step.object, ": qos.pfc puts ", lossless, " traffic classes on lossless queues; ", profile.name, " has ",
        static_cast<int>(*obs.pfc_cap), " (pfc_cap, its lossless queue profiles): map the PFC priorities to at most ",
        static_cast<int>(*obs.pfc_cap), " traffic classes in qos.ets.priority_to_tc"));
  }
  return absl::OkStatus();
}

// The port buffers: either list may be left to the node.
std::optional<PortBuffer> DesiredBuffer(const InterfaceConfig& c, const InterfaceObserved& obs) {
  if (!c.has_qos() || !c.qos().has_buffers()) return std::nullopt;
  const auto& b = c.qos().buffers();
  PortBuffer want = obs.buffer.value_or(PortBuffer{});
  if (b.priority_to_buffer_size() == 8) {
    for (int k = 0; k < 8; ++k) want.prio2buffer[k] = static_cast<uint8_t>(b.priority_to_buffer(k));
  }
  if (b.size_bytes_size() == 8) {
    for (int k = 0; k < 8; ++k) want.size[k] = b.size_bytes(k);
  }
  return want;
}

FieldSpec BufferField() {
  return Erase<PortBuffer>({
      .field = Field::kPortBuffer,
      .path = "qos.buffers",
      .scope = Scope::kNetdev,
      .dcbx_owned = true,
      .note = "a manual buffer layout replaces the one mlx5 derives from PFC",
      .same = BufferSatisfies,
      .desired = DesiredBuffer,
      .observe = Member<PortBuffer>(&InterfaceObserved::buffer),
      .render = BufferText,
      .write = [](NodeIo& io, const Target* t, const HugepagePool&, const std::optional<PortBuffer>&,
                  const PortBuffer& to) { return io.SetBuffer(*t, to); },
      .check = CheckLosslessMinimum,
  });
}

FieldSpec PfcPreventionField() {
  return Erase<uint64_t>({
      .field = Field::kPfcPrevention,
      .path = "qos.pfc_prevention",
      .scope = Scope::kNetdev,
      // A driver reads "auto" back as the timeout it chose; mlx5's is the
      // only one in the tree.
      .same = [](const uint64_t& observed, const uint64_t& wanted) {
        return observed == wanted ||
               (wanted == model::kPfcPreventionAuto && observed == model::kMlx5PfcPreventionAutoMs);
      },
      .max_number = 0xffff,
      .desired = [](const InterfaceConfig& c, const InterfaceObserved&) -> std::optional<uint64_t> {
        if (!c.has_qos() || !c.qos().has_pfc_prevention()) return std::nullopt;
        const auto& p = c.qos().pfc_prevention();
        if (p.timeout_case() == roced::v1::PfcPreventionConfig::kAuto) return model::kPfcPreventionAuto;
        return p.timeout_ms();
      },
      .observe = Member<uint64_t>(&InterfaceObserved::pfc_prevention),
      .render = PreventionText,
      .write = [](NodeIo& io, const Target* t, const HugepagePool&, const std::optional<uint64_t>&,
                  const uint64_t& to) { return io.SetPfcPrevention(*t, static_cast<uint16_t>(to)); },
  });
}

// Config paths of the DCQCN parameters ("qos.dcqcn.cnp_dscp"), built once.
const std::string& DcqcnPath(size_t i) {
  static const auto* paths = [] {
    auto* p = new std::array<std::string, model::kDcqcnParams.size()>;
    for (size_t k = 0; k < p->size(); ++k) (*p)[k] = absl::StrCat("qos.dcqcn.", model::kDcqcnParams[k].name);
    return p;
  }();
  return (*paths)[i];
}

// model::kDcqcnParams[i], one field each: what the config sets of
// qos.dcqcn, by reflection on the parameter's name.
FieldSpec DcqcnField(size_t i) {
  const model::DcqcnParam& param = model::kDcqcnParams[i];
  const hal::EcnRole role =
      param.notification_point ? hal::EcnRole::kNotificationPoint : hal::EcnRole::kReactionPoint;
  const std::string name = param.name;
  return Erase<uint64_t>({
      .field = static_cast<Field>(static_cast<size_t>(Field::kCnpDscp) + i),
      .path = DcqcnPath(i).c_str(),
      .scope = Scope::kNetdev,
      .max_number = param.max,
      .desired = [name](const InterfaceConfig& c, const InterfaceObserved&) -> std::optional<uint64_t> {
        if (!c.has_qos() || !c.qos().has_dcqcn()) return std::nullopt;
        const auto& d = c.qos().dcqcn();
        const google::protobuf::FieldDescriptor* f = d.GetDescriptor()->FindFieldByName(name);
        if (f == nullptr || !d.GetReflection()->HasField(d, f)) return std::nullopt;
        return d.GetReflection()->GetUInt32(d, f);
      },
      .observe = [name](const InterfaceObserved* o, const std::optional<uint64_t>&) -> std::optional<uint64_t> {
        auto it = o->dcqcn.find(name);
        if (it == o->dcqcn.end()) return std::nullopt;
        return it->second;
      },
      .render = Number,
      .write = [role, name](NodeIo& io, const Target* t, const HugepagePool&, const std::optional<uint64_t>&,
                            const uint64_t& to) { return io.SetDcqcnParam(*t, role, name, to); },
  });
}

FieldSpec RoceModeField() {
  return Erase<uint64_t>({
      .field = Field::kRoceMode,
      .path = "roce.default_mode",
      .scope = Scope::kRdmaPort,
      .max_number = roced::v1::ROCE_MODE_V2,
      .desired = [](const InterfaceConfig& c, const InterfaceObserved&) -> std::optional<uint64_t> {
        if (!c.has_roce() || c.roce().default_mode() == roced::v1::ROCE_MODE_UNSPECIFIED) return std::nullopt;
        return static_cast<uint64_t>(c.roce().default_mode());
      },
      .observe = Member<uint64_t>(&InterfaceObserved::roce_mode),
      .render = RoceModeName,
      .write = [](NodeIo& io, const Target* t, const HugepagePool&, const std::optional<uint64_t>&,
                  const uint64_t& to) { return io.SetRoceMode(*t, static_cast<roced::v1::RoceMode>(to)); },
  });
}

FieldSpec RoceTosField() {
  return Erase<uint64_t>({
      .field = Field::kRoceTos,
      .path = "roce.default_tos",
      .scope = Scope::kRdmaPort,
      .max_number = 0xff,
      .desired = [](const InterfaceConfig& c, const InterfaceObserved&) -> std::optional<uint64_t> {
        if (!c.has_roce() || !c.roce().has_default_tos()) return std::nullopt;
        return c.roce().default_tos();
      },
      .observe = Member<uint64_t>(&InterfaceObserved::roce_tos),
      .render = Number,
      .write = [](NodeIo& io, const Target* t, const HugepagePool&, const std::optional<uint64_t>&,
                  const uint64_t& to) { return io.SetRoceTos(*t, static_cast<uint32_t>(to)); },
  });
}

std::vector<FieldSpec> BuildTable() {
  std::vector<FieldSpec> table = {
      HugepagesField(),      // 1. hugepages
      MtuField(),            // 2. MTU, then
      DcbxModeField(),       //    the DCBX mode
      DscpField(),           // 3. DSCP map (trust)
      EtsField(),            // 4. ETS, then
      PfcField(),            //    PFC, then
      BufferField(),         //    the port buffers
      PfcPreventionField(),  // 5. PFC storm prevention
  };
  // 6. CNP and DCQCN parameters
  for (size_t i = 0; i < model::kDcqcnParams.size(); ++i) table.push_back(DcqcnField(i));
  table.push_back(EcnField(true));   //    ECN, notification point
  table.push_back(EcnField(false));  //    and reaction point
  table.push_back(RoceModeField());  // 7. rdma_cm defaults
  table.push_back(RoceTosField());
  return table;
}

static_assert(static_cast<size_t>(Field::kClampTgtRateAfterTimeInc) - static_cast<size_t>(Field::kCnpDscp) + 1 ==
                  model::kDcqcnParams.size(),
              "one Field per DCQCN parameter");

}  // namespace

bool Satisfies(const FieldSpec& spec, const Value& observed, const Value& wanted) {
  return spec.same ? spec.same(observed, wanted) : observed == wanted;
}

std::span<const FieldSpec> Fields() {
  // The table. Its order is the apply order, the order of Field (a unit
  // test holds each entry to its place and the table to kFieldCount).
  static const std::vector<FieldSpec>* table = new std::vector<FieldSpec>(BuildTable());
  return *table;
}

const FieldSpec& Spec(Field field) { return Fields()[static_cast<size_t>(field)]; }

const FieldSpec* SpecByPath(std::string_view path) {
  for (const FieldSpec& s : Fields()) {
    if (path == s.path) return &s;
  }
  return nullptr;
}

const char* FieldPath(Field f) {
  const size_t i = static_cast<size_t>(f);
  return i < kFieldCount ? Fields()[i].path : "?";
}

std::string Render(const Value& v, Field f) {
  if (std::holds_alternative<std::monostate>(v)) return "(unknown)";
  const size_t i = static_cast<size_t>(f);
  return i < kFieldCount ? Fields()[i].render(v) : "?";
}

}  // namespace roced::reconcile

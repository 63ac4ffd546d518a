// The slice of node state the reconciler manages, in kernel terms, plus the
// plan that moves it. Observed fields are std::optional: nullopt means the
// node has no such control (driver without DCB, no ECN sysfs, no rdma_cm
// configfs) or it could not be read; the plan never writes those.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "roced/v1/agent.pb.h"
#include "roced/v1/config.pb.h"
#include "roced/v1/state.pb.h"

namespace roced::reconcile {

// Which interface an InterfaceConfig entry resolved to.
struct Target {
  size_t config_index = 0;  // index into NodeConfig.interfaces
  std::string netdev;
  std::string rdma_device;  // empty when the netdev has no RDMA device
  uint32_t port = 1;
};

// IEEE_8021QAZ_TSA_ETS: an Ets::tsa value.
inline constexpr uint8_t kTsaEts = 2;

struct Ets {
  std::array<uint8_t, 8> prio_tc{};
  std::array<uint8_t, 8> tc_bw{};
  std::array<uint8_t, 8> tsa{};  // kernel values: 0 strict, 2 ets, 255 vendor
  bool operator==(const Ets&) const = default;
};

struct Pfc {
  uint8_t enabled = 0;  // bit N = priority N
  uint16_t delay = 0;
  bool operator==(const Pfc&) const = default;
};

using DscpMap = std::map<uint8_t, uint8_t>;  // DSCP -> priority

// The port's receive buffers. total_size is the port's whole buffer as the
// driver reports it: context for a write, not part of the value (a journal
// entry does not keep it, and two values with the same mapping and sizes
// are the same).
// mlx5 keeps port buffer sizes in cells whose size the SBCAM register
// gives; dcbnl does not report it, so the driver's value for a port that
// does not report one (en_dcbnl.c, mlx5e_query_port_buffers_cell_size).
inline constexpr uint32_t kBufferCellBytes = 128;

struct PortBuffer {
  std::array<uint8_t, 8> prio2buffer{};
  std::array<uint32_t, 8> size{};
  uint32_t total_size = 0;
  bool operator==(const PortBuffer& o) const { return prio2buffer == o.prio2buffer && size == o.size; }
};

struct InterfaceObserved {
  std::optional<uint32_t> mtu;
  std::optional<DscpMap> dscp;  // nullopt: no DCB support
  std::optional<Ets> ets;
  std::optional<Pfc> pfc;
  std::optional<uint8_t> ecn_np;
  std::optional<uint8_t> ecn_rp;
  std::optional<roced::v1::RoceMode> roce_mode;
  std::optional<uint32_t> roce_tos;
  std::optional<PortBuffer> buffer;  // nullopt: no DCB buffer op
  // ETHTOOL_PFC_PREVENTION_TOUT, ms (0 disabled, 0xffff auto).
  std::optional<uint16_t> pfc_prevention;
  // DCQCN parameters the node has, by MLNX_OFED name (model/dcqcn_params.h);
  // a name missing is a parameter the node lacks.
  std::map<std::string, uint64_t> dcqcn;
  // Observed only, never written (diagnose's switch_alignment): the ETS
  // willing bit, i.e. the port takes its DCB settings from the switch.
  // (mlx5 never reports it: mlx5e_dcbnl_ieee_getets leaves it 0.)
  std::optional<bool> dcb_willing;
  // Observed only: how many priorities may have PFC at once (pfc_cap).
  std::optional<uint8_t> pfc_cap;
  // Who runs DCBX (getdcbx's DCB_CAP_DCBX_HOST bit): true host, false the
  // NIC's firmware (or an LLDP agent: LLD_MANAGED); nullopt when the driver
  // reports no mode. In firmware mode the DCB fields (DSCP map, ETS, PFC,
  // buffers) belong to the firmware's DCBX unless the config takes host
  // mode (qos.dcbx_mode: host).
  std::optional<bool> dcbx_host;
  // The netdev's driver as `ethtool -i` names it ("mlx5_core", "bnxt_en",
  // "ice"; empty when unknown): the planner follows its profile's rules
  // (hal/driver_profile.h).
  std::string driver;
  std::string driver_version;
  std::string firmware_version;
};

struct HugepagePool {
  uint64_t size_kb = 0;
  int32_t numa_node = -1;  // -1: node-wide
  bool operator<(const HugepagePool& o) const {
    return std::tie(size_kb, numa_node) < std::tie(o.size_kb, o.numa_node);
  }
  bool operator==(const HugepagePool&) const = default;
};

struct Observed {
  // Parallel to the targets the observation was made for.
  std::vector<InterfaceObserved> interfaces;
  std::map<HugepagePool, std::optional<uint64_t>> hugepages;
};

// The managed fields, in apply order. The order is the one place it is
// decided, and why:
//  1. hugepages first: reserving memory gets harder the longer the node
//     runs, and nothing else depends on it;
//  2. MTU before QoS: a netdev MTU change can reset a port on some NICs,
//     which would undo QoS written before it; then the DCBX mode, since in
//     firmware mode the NIC's DCBX agent replaces the DCB writes after it;
//  3. DSCP map (and with it trust) before ETS and PFC, so traffic is already
//     classified onto the lossless priority when pause is switched on;
//  4. ETS before PFC, and PFC before the port buffers: the kernel's own
//     order within one DCB SET (and mlx5 sizes the lossless buffers from
//     the PFC priorities, which a manual buffer layout then overrides);
//  5. PFC storm prevention right after PFC, so pause on the lossless
//     class never runs without its timeout longer than it must;
//  6. CNP and DCQCN parameters, then the ECN enables: a reaction point
//     starts with the rates it is meant to have; ECN after PFC, so the
//     lossless class has its back-stop before congestion marking starts
//     relying on it;
//  7. rdma_cm defaults last: they only affect connections made afterwards.
// Everything else about a field (config path, value type, how it is
// planned, observed, journalled, rendered and written) is its entry in the
// field table, reconcile/fields.h, which lists the fields in this order.
enum class Field {
  kHugepages = 0,
  kMtu,
  kDcbxMode,
  kDscp,
  kEts,
  kPfc,
  kPortBuffer,
  kPfcPrevention,
  // One per model::kDcqcnParams entry, in its order.
  kCnpDscp,
  kCnp802pPrio,
  kMinTimeBetweenCnps,
  kRpgTimeReset,
  kRpgByteReset,
  kRpgThreshold,
  kRpgMaxRate,
  kRpgAiRate,
  kRpgHaiRate,
  kRpgGd,
  kRpgMinDecFac,
  kRpgMinRate,
  kRateToSetOnFirstCnp,
  kDceTcpG,
  kDceTcpRtt,
  kRateReduceMonitorPeriod,
  kInitialAlphaValue,
  kClampTgtRate,
  kClampTgtRateAfterTimeInc,
  kEcnNp,
  kEcnRp,
  kRoceMode,
  kRoceTos
};
// How many there are (update with the last enumerator).
inline constexpr size_t kFieldCount = static_cast<size_t>(Field::kRoceTos) + 1;

// "qos.pfc" etc.: the config path of a field, as shown in plans (the field
// table's path).
const char* FieldPath(Field f);

// A field's value: monostate for "unknown / the node has no such control",
// else the alternative its table entry names (ValueKind).
using Value = std::variant<std::monostate, uint64_t, DscpMap, Ets, Pfc, PortBuffer>;

struct Step {
  Field field;
  // Target index into the targets vector (interfaces) or unused (hugepages).
  size_t target = 0;
  HugepagePool pool;
  std::string object;  // netdev, "rdma_device/port" or "hugepages-2048kB[/node0]"
  Value current;
  Value wanted;
  bool disruptive = false;
  std::string note;
};

struct Plan {
  std::vector<Step> steps;
  // Per managed field: desired vs observed (including in-sync and
  // unsupported fields, which make no steps).
  std::vector<roced::v1::FieldStatus> fields;
  bool empty() const { return steps.empty(); }
};

// Human renderings used in plans and field statuses: "(unknown)" for
// monostate, else the field table's rendering of the field.
std::string Render(const Value& v, Field f);
roced::v1::PlanStep ToProto(const Step& step);

}  // namespace roced::reconcile

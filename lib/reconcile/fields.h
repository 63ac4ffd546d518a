// The field table: one entry per managed field, holding everything the
// reconciler knows about that field. The planner (what the config wants,
// how it compares), the apply (how to read it back and write it), the
// journal (how its value is kept across a crash) and every rendering of it
// go through its entry; none of them switches over Field.
//
// Adding a managed field: a Field enumerator in state.h (at its place in the
// apply order; kFieldCount follows the last one), its member in
// InterfaceObserved and how LinuxNodeIo reads it, a typed setter on NodeIo
// (and its HAL call) if no existing one carries it, and its entry in
// fields.cc. plan.cc, apply.cc and journal.cc need no change.
//
// The table is built once, on first use, and is immutable afterwards: any
// thread may read it. Its entries are in apply order (the order of Field, so
// Fields()[i].field == Field(i); a unit test holds that).
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "reconcile/state.h"
#include "roced/v1/config.pb.h"
#include "roced/v1/state.pb.h"

namespace roced::reconcile {

class NodeIo;

// The alternative of Value a field's values hold (never monostate, which
// means "unknown"), and the PriorValue.value case it is journalled as.
enum class ValueKind {
  kNumber,   // uint64_t, PriorValue.number
  kDscpMap,  // DscpMap, PriorValue.dscp
  kEts,      // Ets, PriorValue.ets
  kPfc,      // Pfc, PriorValue.pfc
  kBuffer,   // PortBuffer, PriorValue.buffer
};

// What a field is a property of; it also names the object of plan steps,
// field statuses and journal entries.
enum class Scope {
  kHugepagePool,  // a pool: "hugepages-2048kB", "node0/hugepages-1048576kB"
  kNetdev,        // the interface's netdev: "eth0"
  kRdmaPort,      // its RDMA port, "mlx5_0/1" (the netdev when it has none)
};

struct FieldSpec {
  Field field;
  // Config path, as plans, field statuses and PriorValue.field show it
  // ("qos.pfc"). FieldPath(field) returns it.
  const char* path;
  ValueKind kind;
  Scope scope;
  // Changing the field can interrupt traffic (plans flag such steps).
  bool disruptive;
  // The kernel may carry out a write in part (a hugepage pool filled only
  // as far as free memory goes): a read-back short of the wanted value is a
  // PARTIAL step, kept, not a failure that rolls the apply back.
  bool partial;
  // A DCB setting that the NIC's firmware owns while it runs DCBX
  // (InterfaceObserved::dcbx_host false): not written then, unless the
  // config takes host mode (qos.dcbx_mode).
  bool dcbx_owned;
  // Whether the node lacking the control means the config cannot converge
  // (FIELD_SYNC_UNSUPPORTED). Null: always. A field whose control only some
  // drivers have (the MLNX_OFED ECN enables) returns the config's choice;
  // when false, a node without it reports FIELD_SYNC_NOT_MANAGEABLE.
  std::function<bool(const roced::v1::InterfaceConfig& config)> required;
  // Shown with the field's plan steps ("" for none).
  const char* note;
  // Whether an observed value satisfies a wanted one; null: equality. For
  // a field whose driver reads a written value back as another that means
  // the same (mlx5 reads PFC prevention "auto" back as 100 ms). Use
  // Satisfies(), which covers null.
  std::function<bool(const Value& observed, const Value& wanted)> same;

  // The value the interface's config asks for, or nullopt when the config
  // does not manage the field. `observed` is there for the fields whose
  // config may leave part of the value to the node (the PFC delay, a DSCP
  // map under trust dscp). Null for pool fields: ComputePlan takes those
  // from NodeConfig.hugepages.
  std::function<std::optional<Value>(const roced::v1::InterfaceConfig& config,
                                     const InterfaceObserved& observed)>
      desired;
  // The field's value in an observation: `iface` for interface fields (not
  // null), `pool_pages` for pool fields. Monostate when the node has no such
  // control or could not read it.
  std::function<Value(const InterfaceObserved* iface, const std::optional<uint64_t>& pool_pages)> observe;
  // Human rendering of a value of this field's kind. Use Render(v, field),
  // which also covers unknown values.
  std::function<std::string(const Value&)> render;
  // Journal: stores a value of this field's kind in `prior` (its value
  // oneof), and reads one back; nullopt when the entry has the wrong shape
  // for this field (a hand-edited journal) or values out of range.
  std::function<void(const Value&, roced::v1::PriorValue* prior)> to_prior;
  std::function<std::optional<Value>(const roced::v1::PriorValue& prior)> from_prior;
  // Moves the field on the node from `from` (monostate when unknown) to
  // `to` through the NodeIo setter for it. `target` is the step's interface
  // (null for pool fields), `pool` the step's pool (pool fields).
  std::function<absl::Status(NodeIo& io, const Target* target, const HugepagePool& pool, const Value& from,
                             const Value& to)>
      write;
  // Run for every step of this field in a plan before the apply writes
  // anything (null: none); an error fails the apply with nothing written.
  // For what a driver would refuse only once earlier steps are on the node
  // (mlx5 refuses a lossless port buffer below its minimum after the PFC
  // step). `plan` holds `step`, whose interface earlier steps may change;
  // `observed` is that interface as it is now.
  std::function<absl::Status(const Plan& plan, const Step& step, const InterfaceObserved& observed)> check;
};

// `observed` satisfies `wanted` for `spec`'s field (spec.same, or ==).
bool Satisfies(const FieldSpec& spec, const Value& observed, const Value& wanted);

// Every managed field, in apply order.
std::span<const FieldSpec> Fields();
const FieldSpec& Spec(Field field);
// The entry whose config path is `path`; null for none.
const FieldSpec* SpecByPath(std::string_view path);

}  // namespace roced::reconcile

// An in-memory node for tests of the plan/apply/rollback logic. It stands in
// for the kernel only where this machine's kernel cannot (no DCB driver, no
// RDMA configfs here); the Linux implementation is tested against real
// kernels (veth in a netns, and the QEMU lab).
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "reconcile/apply.h"
#include "reconcile/fields.h"

namespace roced::reconcile {

class FakeNodeIoForTest : public NodeIo {
 public:
  std::map<std::string, InterfaceObserved> interfaces;  // by netdev
  std::map<HugepagePool, std::optional<uint64_t>> hugepages;
  // Writes are counted and fail or are ignored per field: a setter stands
  // for the field it writes (SetEcn for kEcnNp or kEcnRp by its role).
  // Write of this field fails with this status.
  std::map<Field, absl::Status> fail;
  // Write of this field "succeeds" but changes nothing (a driver that skips
  // an op silently).
  std::map<Field, bool> ignore;
  // Most pages the kernel will reserve in a pool.
  std::map<HugepagePool, uint64_t> hugepage_limit;
  int writes = 0;
  // Called before each write (a test's way to act at a given point of an
  // apply, e.g. take what a kill -9 there would leave behind).
  std::function<void(Field)> before_write;

  // The agent's reconcile loop calls in from its own thread; tests that run
  // it read and change the node through these (the fields above are for
  // single-threaded tests and for set-up before the agent starts).
  InterfaceObserved Interface(const std::string& netdev) {
    std::lock_guard<std::mutex> lock(mu_.m);
    return interfaces[netdev];
  }
  void Update(const std::string& netdev, const std::function<void(InterfaceObserved&)>& change) {
    std::lock_guard<std::mutex> lock(mu_.m);
    change(interfaces[netdev]);
  }
  void SetFail(Field field, absl::Status status) {
    std::lock_guard<std::mutex> lock(mu_.m);
    fail[field] = std::move(status);
  }
  void ClearFail() {
    std::lock_guard<std::mutex> lock(mu_.m);
    fail.clear();
  }
  int Writes() {
    std::lock_guard<std::mutex> lock(mu_.m);
    return writes;
  }

  InterfaceObserved ObserveInterface(const Target& t) override {
    std::lock_guard<std::mutex> lock(mu_.m);
    return interfaces[t.netdev];
  }
  std::optional<uint64_t> ObserveHugepages(const HugepagePool& p) override {
    std::lock_guard<std::mutex> lock(mu_.m);
    auto it = hugepages.find(p);
    return it == hugepages.end() ? std::nullopt : it->second;
  }
  // The setters store the value where ObserveInterface / ObserveHugepages
  // read it, so a write shows on the next read (unless ignored).
  absl::Status SetHugepages(const HugepagePool& pool, uint64_t count) override {
    std::lock_guard<std::mutex> lock(mu_.m);
    if (std::optional<absl::Status> s = BeginWrite(Field::kHugepages)) return *s;
    if (auto lim = hugepage_limit.find(pool); lim != hugepage_limit.end() && count > lim->second) {
      count = lim->second;
    }
    hugepages[pool] = count;
    return absl::OkStatus();
  }
  absl::Status SetMtu(const Target& t, uint32_t mtu) override {
    return Store(Field::kMtu, t, &InterfaceObserved::mtu, mtu);
  }
  absl::Status SetDcbxHost(const Target& t, bool host) override {
    return Store(Field::kDcbxMode, t, &InterfaceObserved::dcbx_host, host);
  }
  absl::Status SetDscp(const Target& t, const DscpMap&, const DscpMap& to) override {
    return Store(Field::kDscp, t, &InterfaceObserved::dscp, to);
  }
  // Stores what mlx5 reads back: strict and vendor classes at 100%
  // (en_dcbnl.c: mlx5e_build_tc_tx_bw writes MLX5E_MAX_BW_ALLOC for them,
  // mlx5e_dcbnl_ieee_getets reads the port back).
  absl::Status SetEts(const Target& t, const Ets& ets) override {
    Ets stored = ets;
    for (size_t k = 0; k < stored.tsa.size(); ++k) {
      if (stored.tsa[k] != 2) stored.tc_bw[k] = 100;
    }
    return Store(Field::kEts, t, &InterfaceObserved::ets, stored);
  }
  absl::Status SetPfc(const Target& t, const Pfc& pfc) override {
    return Store(Field::kPfc, t, &InterfaceObserved::pfc, pfc);
  }
  absl::Status SetEcn(const Target& t, hal::EcnRole role, uint8_t, uint8_t to) override {
    const bool np = role == hal::EcnRole::kNotificationPoint;
    return Store(np ? Field::kEcnNp : Field::kEcnRp, t, np ? &InterfaceObserved::ecn_np : &InterfaceObserved::ecn_rp,
                 to);
  }
  absl::Status SetRoceMode(const Target& t, roced::v1::RoceMode mode) override {
    return Store(Field::kRoceMode, t, &InterfaceObserved::roce_mode, mode);
  }
  absl::Status SetRoceTos(const Target& t, uint32_t tos) override {
    return Store(Field::kRoceTos, t, &InterfaceObserved::roce_tos, tos);
  }
  absl::Status SetBuffer(const Target& t, const PortBuffer& buffer) override {
    return Store(Field::kPortBuffer, t, &InterfaceObserved::buffer, buffer);
  }
  // Stores what mlx5 reads back: "auto" as its 100 ms.
  absl::Status SetPfcPrevention(const Target& t, uint16_t timeout_ms) override {
    return Store(Field::kPfcPrevention, t, &InterfaceObserved::pfc_prevention,
                 timeout_ms == 0xffff ? uint16_t{100} : timeout_ms);
  }
  // A parameter stands for its field (qos.dcqcn.<name>).
  absl::Status SetDcqcnParam(const Target& t, hal::EcnRole, const std::string& name, uint64_t value) override {
    std::lock_guard<std::mutex> lock(mu_.m);
    const FieldSpec* spec = SpecByPath("qos.dcqcn." + name);
    if (spec == nullptr) return absl::InternalError("no field for DCQCN parameter " + name);
    if (std::optional<absl::Status> s = BeginWrite(spec->field)) return *s;
    interfaces[t.netdev].dcqcn[name] = value;
    return absl::OkStatus();
  }

 private:
  // A copy of the fake (tests build nodes by value) gets its own mutex.
  struct Mutex {
    std::mutex m;
    Mutex() = default;
    Mutex(const Mutex&) {}
    Mutex& operator=(const Mutex&) { return *this; }
  };
  Mutex mu_;

  // Counts a write of `field` and runs before_write; the status to return
  // instead of writing (an injected failure, or OK for an ignored write).
  // Called with mu_ held.
  std::optional<absl::Status> BeginWrite(Field field) {
    ++writes;
    if (before_write) before_write(field);  // runs under mu_: use the fields directly
    if (auto it = fail.find(field); it != fail.end()) return it->second;
    if (ignore[field]) return absl::OkStatus();
    return std::nullopt;
  }

  template <typename M>
  absl::Status Store(Field field, const Target& t, std::optional<M> InterfaceObserved::*member, M value) {
    std::lock_guard<std::mutex> lock(mu_.m);
    if (std::optional<absl::Status> s = BeginWrite(field)) return *s;
    interfaces[t.netdev].*member = std::move(value);
    return absl::OkStatus();
  }
};

}  // namespace roced::reconcile

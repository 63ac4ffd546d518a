// An in-memory node for tests of the plan/apply/rollback logic. It stands in
// for the kernel only where this machine's kernel cannot (no DCB driver, no
// RDMA configfs here); the Linux implementation is tested against real
// kernels (veth in a netns, and the QEMU lab).
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "reconcile/apply.h"

namespace roced::reconcile {

class FakeNodeIoForTest : public NodeIo {
 public:
  std::map<std::string, InterfaceObserved> interfaces;  // by netdev
  std::map<HugepagePool, std::optional<uint64_t>> hugepages;
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
  std::function<void(const Step&)> before_write;

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
  absl::Status Write(const Target* t, const Step& step, const Value&, const Value& to) override {
    std::lock_guard<std::mutex> lock(mu_.m);  // before_write runs under it: use the fields directly
    ++writes;
    if (before_write) before_write(step);
    if (auto it = fail.find(step.field); it != fail.end()) return it->second;
    if (ignore[step.field]) return absl::OkStatus();
    auto num = [&] { return std::get<uint64_t>(to); };
    if (step.field == Field::kHugepages) {
      uint64_t n = num();
      if (auto lim = hugepage_limit.find(step.pool); lim != hugepage_limit.end() && n > lim->second) {
        n = lim->second;
      }
      hugepages[step.pool] = n;
      return absl::OkStatus();
    }
    InterfaceObserved& i = interfaces[t->netdev];
    switch (step.field) {
      case Field::kMtu: i.mtu = static_cast<uint32_t>(num()); break;
      case Field::kDscp: i.dscp = std::get<DscpMap>(to); break;
      case Field::kEts: i.ets = std::get<Ets>(to); break;
      case Field::kPfc: i.pfc = std::get<Pfc>(to); break;
      case Field::kEcnNp: i.ecn_np = static_cast<uint8_t>(num()); break;
      case Field::kEcnRp: i.ecn_rp = static_cast<uint8_t>(num()); break;
      case Field::kRoceMode: i.roce_mode = static_cast<roced::v1::RoceMode>(num()); break;
      case Field::kRoceTos: i.roce_tos = static_cast<uint32_t>(num()); break;
      default: break;
    }
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
};

}  // namespace roced::reconcile

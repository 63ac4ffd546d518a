#include "hal/ethtool_tunable.h"

#include <linux/ethtool.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "hal/ethtool_info.h"

namespace roced::hal {
namespace {

// struct ethtool_tunable ends in a flexible array, the u16 value here; the
// kernel checks that type_id and len fit the id (ETHTOOL_TUNABLE_U16, 2
// bytes) before it asks the driver (-EINVAL otherwise).
struct PfcPreventionRequest {
  alignas(ethtool_tunable) unsigned char buf[sizeof(ethtool_tunable) + sizeof(uint16_t)] = {};
  ethtool_tunable* head() { return reinterpret_cast<ethtool_tunable*>(buf); }
  uint16_t value() const {
    uint16_t v = 0;
    std::memcpy(&v, buf + sizeof(ethtool_tunable), sizeof(v));
    return v;
  }
  void set_value(uint16_t v) { std::memcpy(buf + sizeof(ethtool_tunable), &v, sizeof(v)); }
};

absl::Status Ioctl(const std::string& netdev, PfcPreventionRequest* req, const char* what) {
  absl::Status s = EthtoolIoctl(netdev, req->buf, what);
  if (absl::IsUnimplemented(s)) {
    return absl::UnimplementedError(
        absl::StrCat(netdev, ": ", what, ": the driver has no PFC storm prevention (EOPNOTSUPP)"));
  }
  return s;
}

PfcPreventionRequest Request(uint32_t cmd) {
  PfcPreventionRequest req;
  req.head()->cmd = cmd;
  req.head()->id = ETHTOOL_PFC_PREVENTION_TOUT;
  req.head()->type_id = ETHTOOL_TUNABLE_U16;
  req.head()->len = sizeof(uint16_t);
  return req;
}

}  // namespace

absl::StatusOr<uint16_t> EthtoolTunable::GetPfcPreventionTimeout(const std::string& netdev) const {
  PfcPreventionRequest req = Request(ETHTOOL_GTUNABLE);
  if (absl::Status s = Ioctl(netdev, &req, "ETHTOOL_GTUNABLE pfc-prevention-tout"); !s.ok()) return s;
  return req.value();
}

absl::Status EthtoolTunable::SetPfcPreventionTimeout(const std::string& netdev, uint16_t timeout_ms) const {
  PfcPreventionRequest req = Request(ETHTOOL_STUNABLE);
  req.set_value(timeout_ms);
  return Ioctl(netdev, &req, absl::StrCat("ETHTOOL_STUNABLE pfc-prevention-tout ", timeout_ms).c_str());
}

}  // namespace roced::hal

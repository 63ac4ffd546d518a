// Probe baselines per driver and firmware: the field guides' "re-run
// perftest after every upgrade", kept by the agent itself. For each
// (peer, local device, kind, size) the store keeps the figures of the
// newest successful probes (latency p50/p99, bandwidth) under the local
// device's driver and firmware version, and, once those change, the figures
// from before as `previous`: the diagnosis compares the two
// (diagnose probe_baseline).
//
// Persisted as proto3 JSON (roced.v1.ProbeBaselines) at `path`, written
// atomically, so an upgrade that restarts the agent (a driver reload, a
// reboot for firmware) keeps the figures from before it. Bounded: at most
// `max_baselines` keys (the one probed longest ago goes first) and
// kFiguresKept figures per version, so the file stays small (about 1 KiB
// per key). A file that does not parse is logged and ignored, and
// replaced at the next save; the agent starts with no baselines.
//
// Thread-safe.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "roced/v1/agent.pb.h"
#include "roced/v1/state.pb.h"

namespace roced::probe {

// What a baseline is kept under: the local RDMA device's driver (name and
// version, hal::DriverVersion) and firmware.
struct DeviceVersion {
  std::string driver;
  std::string driver_version;
  std::string fw_version;
  bool operator==(const DeviceVersion&) const = default;
};

class ProbeBaselineStore {
 public:
  static constexpr size_t kMaxBaselines = 256;
  static constexpr size_t kFiguresKept = 8;
  // Saves of figures alone come at most this often (every probe result
  // changes them); a version change is saved at once.
  static constexpr absl::Duration kSaveEvery = absl::Minutes(5);

  // `path` empty: nothing is loaded or saved.
  explicit ProbeBaselineStore(std::string path, size_t max_baselines = kMaxBaselines);

  // Reads the file (absent: no baselines).
  void Load();
  // Records a successful probe's figures under the local device's
  // `version`; failed results are ignored. A new version moves the key's
  // current figures to `previous`.
  void Add(const roced::v1::ProbeResult& result, const DeviceVersion& version, absl::Time now);
  // Writes the file when it changed: at once after a version change, else
  // when kSaveEvery passed since the last write. Errors are returned (and
  // tried again at the next call).
  absl::Status SaveIfDue(absl::Time now);
  // Writes the file when anything changed since the last write.
  absl::Status Save();

  roced::v1::ProbeBaselines Snapshot() const;

 private:
  absl::Status SaveLocked();
  roced::v1::ProbeBaseline* FindOrAddLocked(const roced::v1::ProbeResult& result);

  const std::string path_;
  const size_t max_baselines_;
  mutable std::mutex mu_;
  // Below: guarded by mu_.
  roced::v1::ProbeBaselines baselines_;
  bool dirty_ = false;
  bool version_changed_ = false;
  absl::Time last_save_ = absl::InfinitePast();
};

// The median of `values` (0 when empty).
double Median(const google::protobuf::RepeatedField<double>& values);

}  // namespace roced::probe

#include "probe/baseline.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/proto_time.h"

namespace roced::probe {
namespace {

void Push(google::protobuf::RepeatedField<double>* values, double v) {
  values->Add(v);
  if (values->size() > static_cast<int>(ProbeBaselineStore::kFiguresKept)) values->erase(values->begin());
}

bool SameKey(const roced::v1::ProbeBaseline& b, const roced::v1::ProbeResult& r) {
  return b.peer() == r.peer() && b.device() == r.device() && b.kind() == r.kind() && b.size() == r.size();
}

DeviceVersion VersionOf(const roced::v1::ProbeFigures& f) {
  return DeviceVersion{f.driver(), f.driver_version(), f.fw_version()};
}

}  // namespace

double Median(const google::protobuf::RepeatedField<double>& values) {
  if (values.empty()) return 0;
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

ProbeBaselineStore::ProbeBaselineStore(std::string path, size_t max_baselines)
    : path_(std::move(path)), max_baselines_(max_baselines) {}

void ProbeBaselineStore::Load() {
  if (path_.empty()) return;
  absl::StatusOr<std::string> text = util::ReadRegularFile(path_, util::kMaxStateFileBytes, "probe baselines");
  if (!text.ok()) {
    if (!absl::IsNotFound(text.status())) {
      LOG_WARNING << "probe baselines not read: " << text.status().message();
    }
    return;
  }
  roced::v1::ProbeBaselines loaded;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  if (auto st = google::protobuf::util::JsonStringToMessage(*text, &loaded, opts); !st.ok()) {
    LOG_WARNING << "probe baselines " << path_ << " ignored (replaced at the next save): " << st.ToString();
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  baselines_ = std::move(loaded);
  while (static_cast<size_t>(baselines_.baselines_size()) > max_baselines_) baselines_.mutable_baselines()->RemoveLast();
}

roced::v1::ProbeBaseline* ProbeBaselineStore::FindOrAddLocked(const roced::v1::ProbeResult& result) {
  auto* all = baselines_.mutable_baselines();
  for (auto& b : *all) {
    if (SameKey(b, result)) return &b;
  }
  if (static_cast<size_t>(all->size()) >= max_baselines_) {
    // The key probed longest ago makes room.
    auto oldest = std::min_element(all->begin(), all->end(), [](const auto& a, const auto& b) {
      return util::FromProto(a.current().last_at()) < util::FromProto(b.current().last_at());
    });
    all->erase(oldest);
  }
  roced::v1::ProbeBaseline* b = all->Add();
  b->set_peer(result.peer());
  b->set_device(result.device());
  b->set_kind(result.kind());
  b->set_size(result.size());
  return b;
}

void ProbeBaselineStore::Add(const roced::v1::ProbeResult& result, const DeviceVersion& version, absl::Time now) {
  if (!result.success()) return;
  std::lock_guard<std::mutex> lock(mu_);
  roced::v1::ProbeBaseline* b = FindOrAddLocked(result);
  roced::v1::ProbeFigures* cur = b->mutable_current();
  if (cur->has_first_at() && !(VersionOf(*cur) == version)) {
    *b->mutable_previous() = std::move(*cur);
    cur->Clear();
    version_changed_ = true;
  }
  if (!cur->has_first_at()) {
    cur->set_driver(version.driver);
    cur->set_driver_version(version.driver_version);
    cur->set_fw_version(version.fw_version);
    *cur->mutable_first_at() = util::ToProto(now);
  }
  *cur->mutable_last_at() = util::ToProto(now);
  if (result.kind() == roced::v1::PROBE_KIND_BANDWIDTH) {
    Push(cur->mutable_gbps(), result.bandwidth().gbps());
  } else {
    Push(cur->mutable_p50_us(), result.latency().p50_us());
    Push(cur->mutable_p99_us(), result.latency().p99_us());
  }
  dirty_ = true;
}

absl::Status ProbeBaselineStore::SaveIfDue(absl::Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!dirty_ || (!version_changed_ && now - last_save_ < kSaveEvery)) return absl::OkStatus();
  last_save_ = now;
  return SaveLocked();
}

absl::Status ProbeBaselineStore::Save() {
  std::lock_guard<std::mutex> lock(mu_);
  return dirty_ ? SaveLocked() : absl::OkStatus();
}

absl::Status ProbeBaselineStore::SaveLocked() {
  if (path_.empty()) return absl::OkStatus();
  std::string json;
  if (auto st = google::protobuf::util::MessageToJsonString(baselines_, &json); !st.ok()) {
    return absl::InternalError(absl::StrCat("probe baselines: ", st.ToString()));
  }
  if (absl::Status s = util::WriteFileAtomic(path_, json); !s.ok()) return s;
  dirty_ = false;
  version_changed_ = false;
  return absl::OkStatus();
}

roced::v1::ProbeBaselines ProbeBaselineStore::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return baselines_;
}

}  // namespace roced::probe

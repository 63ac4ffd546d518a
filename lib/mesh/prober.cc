#include "mesh/prober.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "mesh/probe_packet.h"
#include "util/status_macros.h"

namespace roced::mesh {

absl::StatusOr<MeshProber> MeshProber::Create(std::string self, MeshProberOptions options) {
  if (options.timeout < kMinMeshTimeout || options.timeout > kMaxMeshTimeout) {
    return absl::InvalidArgumentError(absl::StrCat("mesh timeout ", absl::FormatDuration(options.timeout),
                                                   " is out of range [", absl::FormatDuration(kMinMeshTimeout),
                                                   ", ", absl::FormatDuration(kMaxMeshTimeout), "]"));
  }
  ASSIGN_OR_RETURN(MeshSchedule schedule, MeshSchedule::Create(self, options.schedule));
  ASSIGN_OR_RETURN(ResultWindows results, ResultWindows::Create(options.results));
  return MeshProber(std::move(self), std::move(options), std::move(schedule), std::move(results));
}

MeshProber::MeshProber(std::string self, MeshProberOptions options, MeshSchedule schedule, ResultWindows results)
    : self_(std::move(self)),
      options_(std::move(options)),
      schedule_(std::move(schedule)),
      results_(std::move(results)),
      key_(RendezvousWeight("prober", self_)) {}

void MeshProber::SetPinglist(const Pinglist& pinglist, int64_t now_ns) {
  absl::flat_hash_map<std::string, std::string> tors;
  for (const PinglistEntry& e : pinglist.entries) tors[e.peer] = e.tor;
  for (const auto& [peer, tor] : tors_) {
    if (tors.contains(peer)) continue;
    results_.Forget(peer);
    targets_.erase(peer);
    lost_in_row_.erase(peer);
  }
  tors_ = std::move(tors);
  schedule_.SetPinglist(pinglist, now_ns);
}

void MeshProber::SetTarget(const std::string& peer, std::optional<MeshTarget> target) {
  if (target.has_value() && tors_.contains(peer)) {
    targets_[peer] = *target;
  } else {
    targets_.erase(peer);
  }
}

std::string MeshProber::TorOf(const std::string& peer) const {
  auto it = tors_.find(peer);
  return it == tors_.end() ? "" : it->second;
}

std::vector<MeshRequest> MeshProber::Due(int64_t now_ns, size_t max, uint32_t local_mtu) {
  std::vector<MeshRequest> out;
  if (pending_.size() >= kMaxPending) return out;
  max = std::min(max, kMaxPending - pending_.size());
  for (ScheduledProbe& probe : schedule_.Due(now_ns, max)) {
    auto target = targets_.find(probe.peer);
    if (target == targets_.end()) continue;
    uint32_t size = probe.size_bytes;
    if (size == 0) {
      size = target->second.active_mtu == 0 ? local_mtu : std::min(local_mtu, target->second.active_mtu);
    }
    size = std::clamp<uint32_t>(size, kProbeHeaderBytes, kMaxProbeMessageBytes);
    ProbePacket packet;
    packet.dscp = static_cast<uint8_t>(probe.dscp);
    packet.size = size;
    packet.flow_label = probe.flow_label;
    packet.sequence = next_id_;
    packet.prober_key = key_;
    packet.t1_ns = static_cast<uint64_t>(now_ns);
    absl::StatusOr<std::vector<uint8_t>> bytes = EncodeProbe(packet);
    if (!bytes.ok()) continue;  // the schedule's classes are validated: cannot happen
    MeshRequest request{probe.peer, target->second, probe.flow_label, packet.dscp, next_id_, std::move(*bytes)};
    pending_.emplace(next_id_, Pending{probe.peer, size, probe.dscp, probe.flow_label, now_ns, now_ns, false});
    ++next_id_;
    out.push_back(std::move(request));
  }
  return out;
}

void MeshProber::Sent(uint64_t id, int64_t stamp_ns, bool nic_clock) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  it->second.t1_ns = stamp_ns;
  it->second.nic_clock = nic_clock;
}

void MeshProber::SendFailed(uint64_t id) { pending_.erase(id); }

void MeshProber::Record(const Pending& p, bool answered, int64_t rtt_ns, int64_t hold_ns) {
  ProbeOutcome outcome;
  outcome.peer = p.peer;
  outcome.size_bytes = p.size_bytes;
  outcome.dscp = p.dscp;
  outcome.sent_ns = p.sent_ns;
  outcome.answered = answered;
  outcome.rtt_ns = rtt_ns;
  outcome.hold_ns = hold_ns;
  outcome.flow_label = options_.source_port ? options_.source_port(p.flow_label) : p.flow_label;
  // RESOURCE_EXHAUSTED past max_keys: the series is not kept (bounded).
  results_.Record(outcome).IgnoreError();
  if (answered) {
    lost_in_row_.erase(p.peer);
  } else if (tors_.contains(p.peer)) {
    ++lost_in_row_[p.peer];
  }
}

std::optional<MeshOutcome> MeshProber::OnReply(std::span<const uint8_t> bytes, int64_t t4_ns, bool nic_clock) {
  absl::StatusOr<ProbePacket> reply = DecodeProbe(bytes);
  if (!reply.ok() || reply->type != ProbeType::kReply || reply->prober_key != key_) {
    ++unmatched_;
    return std::nullopt;
  }
  auto it = pending_.find(reply->sequence);
  if (it == pending_.end() || it->second.size_bytes != reply->size || it->second.dscp != reply->dscp) {
    ++unmatched_;
    return std::nullopt;
  }
  const Pending p = std::move(it->second);
  pending_.erase(it);
  // t1 and t4 from one clock: a NIC-stamped send with a host-stamped
  // receive (or the reverse) gives no round trip; the probe still counts
  // as answered.
  ProbePacket stamped = *reply;
  stamped.t1_ns = static_cast<uint64_t>(p.t1_ns);
  std::optional<uint64_t> rtt;
  if (p.nic_clock == nic_clock) rtt = NetworkRttNs(stamped, static_cast<uint64_t>(t4_ns));
  const int64_t rtt_ns = rtt.has_value() ? static_cast<int64_t>(*rtt) : 0;
  // The responder's hold is of its own clock alone: known whatever ours.
  const uint64_t held = reply->t3_ns - reply->t2_ns;
  const int64_t hold_ns = reply->t3_ns < reply->t2_ns ? -1 : static_cast<int64_t>(std::min<uint64_t>(held, INT64_MAX));
  Record(p, true, rtt_ns, hold_ns);
  return MeshOutcome{p.peer, p.size_bytes, p.dscp, true, rtt_ns};
}

std::vector<MeshOutcome> MeshProber::ExpireLost(int64_t now_ns) {
  std::vector<MeshOutcome> lost;
  const int64_t timeout = absl::ToInt64Nanoseconds(options_.timeout);
  while (!pending_.empty() && pending_.begin()->second.sent_ns + timeout <= now_ns) {
    const Pending& p = pending_.begin()->second;
    Record(p, false, 0, -1);
    lost.push_back(MeshOutcome{p.peer, p.size_bytes, p.dscp, false, 0});
    pending_.erase(pending_.begin());
  }
  return lost;
}

std::vector<std::string> MeshProber::PeersLosingAll(uint32_t at_least) const {
  std::vector<std::string> out;
  for (const auto& [peer, n] : lost_in_row_) {
    if (n >= at_least) out.push_back(peer);
  }
  std::sort(out.begin(), out.end());
  return out;
}

int64_t MeshProber::NextWake() const {
  int64_t wake = schedule_.NextDue();
  if (!pending_.empty()) {
    wake = std::min(wake, pending_.begin()->second.sent_ns + absl::ToInt64Nanoseconds(options_.timeout));
  }
  return wake;
}

absl::StatusOr<MeshAnswer> MeshProber::Answer(std::span<const uint8_t> bytes, int64_t t2_ns, int64_t t3_ns,
                                              bool nic_clock) {
  ASSIGN_OR_RETURN(ProbePacket request, DecodeProbe(bytes));
  if (request.type != ProbeType::kRequest) return absl::InvalidArgumentError("not a request");
  ASSIGN_OR_RETURN(std::vector<uint8_t> reply,
                   EncodeProbe(ReplyTo(request, static_cast<uint64_t>(t2_ns), static_cast<uint64_t>(t3_ns), nic_clock)));
  return MeshAnswer{std::move(reply), request.dscp, request.flow_label};
}

}  // namespace roced::mesh

#include "mesh/probe_packet.h"

#include "absl/strings/str_cat.h"

namespace roced::mesh {
namespace {

constexpr uint8_t kMagic[4] = {'R', 'C', 'M', 'P'};
constexpr uint8_t kVersion = 1;
constexpr uint8_t kProberNicClock = 1u << 0;
constexpr uint8_t kResponderNicClock = 1u << 1;
constexpr uint8_t kKnownFlags = kProberNicClock | kResponderNicClock;

void Put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}
void Put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (56 - 8 * i));
}
uint32_t Get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | p[i];
  return v;
}
uint64_t Get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}

uint8_t PadByte(size_t offset, uint64_t sequence) {
  return static_cast<uint8_t>((offset + sequence % 251) % 251);
}

absl::Status CheckSizeAndDscp(uint64_t size, uint32_t dscp) {
  if (size < kProbeHeaderBytes || size > kMaxProbeMessageBytes) {
    return absl::InvalidArgumentError(absl::StrCat("size: ", size, " is out of range; allowed ", kProbeHeaderBytes,
                                                   "-", kMaxProbeMessageBytes, " bytes"));
  }
  if (dscp > 63) return absl::InvalidArgumentError(absl::StrCat("dscp: ", dscp, " is out of range; allowed 0-63"));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<uint8_t>> EncodeProbe(const ProbePacket& packet) {
  if (absl::Status s = CheckSizeAndDscp(packet.size, packet.dscp); !s.ok()) return s;
  if (packet.type != ProbeType::kRequest && packet.type != ProbeType::kReply) {
    return absl::InvalidArgumentError(
        absl::StrCat("type: ", static_cast<int>(packet.type), " is not a probe type; allowed 1 (request), 2 (reply)"));
  }
  std::vector<uint8_t> out(packet.size, 0);
  uint8_t* p = out.data();
  for (int i = 0; i < 4; ++i) p[i] = kMagic[i];
  p[4] = kVersion;
  p[5] = static_cast<uint8_t>(packet.type);
  p[6] = static_cast<uint8_t>((packet.prober_nic_clock ? kProberNicClock : 0) |
                              (packet.responder_nic_clock ? kResponderNicClock : 0));
  p[7] = packet.dscp;
  Put32(p + 8, packet.size);
  Put32(p + 12, packet.flow_label);
  Put64(p + 16, packet.sequence);
  Put64(p + 24, packet.prober_key);
  Put64(p + 32, packet.t1_ns);
  Put64(p + 40, packet.t2_ns);
  Put64(p + 48, packet.t3_ns);
  for (size_t i = kProbeHeaderBytes; i < out.size(); ++i) p[i] = PadByte(i, packet.sequence);
  return out;
}

absl::StatusOr<ProbePacket> DecodeProbe(std::span<const uint8_t> bytes) {
  if (bytes.size() < kProbeHeaderBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("probe: ", bytes.size(), " bytes, shorter than its ", kProbeHeaderBytes, "-byte header"));
  }
  const uint8_t* p = bytes.data();
  for (int i = 0; i < 4; ++i) {
    if (p[i] != kMagic[i]) return absl::InvalidArgumentError("probe: not a roced mesh probe (magic)");
  }
  if (p[4] != kVersion) {
    return absl::InvalidArgumentError(absl::StrCat("version: ", static_cast<int>(p[4]), " is not supported; allowed 1"));
  }
  if (p[5] != static_cast<uint8_t>(ProbeType::kRequest) && p[5] != static_cast<uint8_t>(ProbeType::kReply)) {
    return absl::InvalidArgumentError(absl::StrCat("type: ", static_cast<int>(p[5]), " is not a probe type; allowed 1, 2"));
  }
  if ((p[6] & ~kKnownFlags) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("flags: 0x", absl::Hex(p[6]), " has unknown bits"));
  }
  ProbePacket out;
  out.type = static_cast<ProbeType>(p[5]);
  out.prober_nic_clock = (p[6] & kProberNicClock) != 0;
  out.responder_nic_clock = (p[6] & kResponderNicClock) != 0;
  out.dscp = p[7];
  out.size = Get32(p + 8);
  if (absl::Status s = CheckSizeAndDscp(out.size, out.dscp); !s.ok()) return s;
  if (out.size != bytes.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("size: ", out.size, " bytes stated, ", bytes.size(), " received (truncated or padded)"));
  }
  out.flow_label = Get32(p + 12);
  out.sequence = Get64(p + 16);
  out.prober_key = Get64(p + 24);
  out.t1_ns = Get64(p + 32);
  out.t2_ns = Get64(p + 40);
  out.t3_ns = Get64(p + 48);
  for (size_t i = 56; i < kProbeHeaderBytes; ++i) {
    if (p[i] != 0) return absl::InvalidArgumentError(absl::StrCat("reserved: byte ", i, " is not zero"));
  }
  for (size_t i = kProbeHeaderBytes; i < bytes.size(); ++i) {
    if (p[i] != PadByte(i, out.sequence)) {
      return absl::DataLossError(absl::StrCat("padding: byte ", i, " of ", bytes.size(), " is 0x",
                                              absl::Hex(p[i], absl::kZeroPad2), ", expected 0x",
                                              absl::Hex(PadByte(i, out.sequence), absl::kZeroPad2)));
    }
  }
  return out;
}

ProbePacket ReplyTo(const ProbePacket& request, uint64_t t2_ns, uint64_t t3_ns, bool nic_clock) {
  ProbePacket reply = request;
  reply.type = ProbeType::kReply;
  reply.responder_nic_clock = nic_clock;
  reply.t2_ns = t2_ns;
  reply.t3_ns = t3_ns;
  return reply;
}

std::optional<uint64_t> NetworkRttNs(const ProbePacket& reply, uint64_t t4_ns) {
  if (t4_ns < reply.t1_ns || reply.t3_ns < reply.t2_ns) return std::nullopt;
  const uint64_t total = t4_ns - reply.t1_ns;
  const uint64_t held = reply.t3_ns - reply.t2_ns;
  if (held > total) return std::nullopt;
  return total - held;
}

}  // namespace roced::mesh

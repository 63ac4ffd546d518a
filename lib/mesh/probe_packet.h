// The fleet mesh's UD probe on the wire: what a prober sends in
// one unreliable-datagram message and what the responder echoes back, and
// the network round trip taken from the four timestamps (the method of
// R-Pingmesh, SIGCOMM 2024):
//   t1  the prober sends the request     (prober's clock)
//   t2  the responder receives it        (responder's clock)
//   t3  the responder sends the reply    (responder's clock)
//   t4  the prober receives the reply    (prober's clock)
// network RTT = (t4 - t1) - (t3 - t2). Only differences taken on one host
// are used, so the two clocks need not agree; each side says whether its
// pair came from the NIC's completion timestamps or from software.
//
// Layout (network byte order), 64 bytes of header then padding to the
// probe's size, so one probe size tests one packet size on the path both
// ways (the reply is as long as the request):
//    0  magic "RCMP"            4
//    4  version (1)             1
//    5  type (1 request, 2 reply)
//    6  flags: bit 0 prober's stamps from the NIC, bit 1 responder's
//    7  DSCP the probe was sent with
//    8  size: the whole message in bytes
//   12  flow label index
//   16  sequence (the prober's, per peer)
//   24  prober key (its member name's rendezvous hash: replies to another
//       prober are dropped)
//   32  t1    40  t2    48  t3    (nanoseconds)
//   56  reserved, zero
//   64  padding: byte i of the message is (i + sequence) mod 251, so a
//       path that corrupts or truncates large packets shows as data loss
//       rather than as a good answer.
//
// Pure: no I/O, no clock. Decode reads only the bytes it is given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"

namespace roced::mesh {

inline constexpr uint32_t kProbeHeaderBytes = 64;
inline constexpr uint32_t kMaxProbeMessageBytes = 9000;  // the largest RoCE MTU a UD message fits in

enum class ProbeType : uint8_t { kRequest = 1, kReply = 2 };

struct ProbePacket {
  ProbeType type = ProbeType::kRequest;
  bool prober_nic_clock = false;     // t1 (and t4) from the NIC's completion timestamps
  bool responder_nic_clock = false;  // t2 and t3 from the NIC's
  uint8_t dscp = 0;                  // 0-63
  uint32_t size = kProbeHeaderBytes; // kProbeHeaderBytes to kMaxProbeMessageBytes
  uint32_t flow_label = 0;
  uint64_t sequence = 0;
  uint64_t prober_key = 0;
  uint64_t t1_ns = 0;
  uint64_t t2_ns = 0;  // 0 in a request
  uint64_t t3_ns = 0;  // 0 in a request

  bool operator==(const ProbePacket&) const = default;
};

// The message's bytes: `packet.size` of them. INVALID_ARGUMENT (naming the
// field and its range) for a size or DSCP out of range.
absl::StatusOr<std::vector<uint8_t>> EncodeProbe(const ProbePacket& packet);

// The packet in `bytes`, which must be the whole message. INVALID_ARGUMENT
// for what is not a probe (short, another magic, version or type, a size
// field other than the message's length, a DSCP over 63, reserved bits
// set); DATA_LOSS naming the offset for padding that is not the pattern.
absl::StatusOr<ProbePacket> DecodeProbe(std::span<const uint8_t> bytes);

// The responder's reply to `request`, received at t2 and sent at t3 by its
// clock (nic_clock: both from the NIC's timestamps).
ProbePacket ReplyTo(const ProbePacket& request, uint64_t t2_ns, uint64_t t3_ns, bool nic_clock);

// The network round trip of a reply received at t4 (the prober's clock):
// (t4 - t1) - (t3 - t2). nullopt when the stamps cannot be right (t4
// before t1, t3 before t2, or the responder's time longer than the whole
// round trip, as when the two sides' stamps were taken on different
// clocks).
std::optional<uint64_t> NetworkRttNs(const ProbePacket& reply, uint64_t t4_ns);

}  // namespace roced::mesh

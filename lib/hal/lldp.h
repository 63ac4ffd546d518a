// LLDP (IEEE 802.1AB) as a RoCE host needs it: what the switch at the other
// end of a link says about itself and its DCB settings. A pure decoder over
// the bytes of one received frame; the socket that receives them is
// hal/lldp_socket.h. roced only listens: it never sends an LLDPDU, so it
// cannot take part in (or disturb) DCBX negotiation.
//
// Decoded:
//  - the mandatory chassis ID, port ID and TTL (a frame without them, in
//    that order, is refused as 802.1AB says);
//  - system name, port description;
//  - IEEE 802.3 maximum frame size (OUI 00-12-0F, subtype 4);
//  - IEEE 802.1Qaz (OUI 00-80-C2): ETS configuration (9), ETS
//    recommendation (10), PFC configuration (11), application priority (12);
//  - pre-standard CEE DCBX 1.01 (OUI 00-1B-21, subtype 2): its priority
//    group, PFC and application sub-TLVs, translated to the IEEE shapes and
//    marked with their source.
// When a frame carries both, the IEEE PFC and ETS win (the CEE ones are
// noted). A malformed optional TLV is skipped with a note; nothing here
// trusts a length it has not checked against the buffer, every string is
// made valid UTF-8 (proto strings and Prometheus labels must be), and the
// application table is bounded (kMaxLldpApps).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "absl/status/statusor.h"
#include "roced/v1/state.pb.h"

namespace roced::hal {

inline constexpr uint16_t kEthPLldp = 0x88cc;
// The nearest-bridge group address: what switches send LLDP to and what
// no bridge forwards, so a frame heard here comes from the link's peer.
inline constexpr std::array<uint8_t, 6> kLldpNearestBridge = {0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e};
// Application-table entries kept per neighbour (IEEE and CEE together);
// the rest are counted in a note. A frame holds at most ~490 entries.
inline constexpr size_t kMaxLldpApps = 64;
// Longest string field kept (the TLVs allow 255 bytes).
inline constexpr size_t kMaxLldpText = 255;

// An Ethernet frame as an AF_PACKET socket delivers it: destination and
// source MAC, at most one 802.1Q tag, EtherType 0x88CC, the LLDPDU.
// INVALID_ARGUMENT naming what is wrong for anything else. The result has
// every field of LldpNeighbor the frame carries; netdev, last_heard,
// expires_at and frames are the caller's.
absl::StatusOr<roced::v1::LldpNeighbor> DecodeLldpFrame(std::span<const uint8_t> frame);

// The LLDPDU alone (the bytes after the EtherType).
absl::StatusOr<roced::v1::LldpNeighbor> DecodeLldpdu(std::span<const uint8_t> pdu);

// "mac_address" etc. for the ID subtypes of 802.1AB (chassis and port
// numbering differ); "subtype_N" for others.
const char* ChassisIdSubtypeName(uint32_t subtype);
const char* PortIdSubtypeName(uint32_t subtype);

}  // namespace roced::hal

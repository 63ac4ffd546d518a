// The mesh's UD probe message: the layout pinned byte for byte (agents of
// different versions must read each other), round trips at the rotated
// sizes, every malformed message refused naming what is wrong, corrupted
// padding reported as data loss at its offset, and the network round trip
// from the four timestamps.
#include "mesh/probe_packet.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace roced::mesh {
namespace {

using ::testing::HasSubstr;

ProbePacket Request(uint32_t size) {
  ProbePacket p;
  p.size = size;
  p.dscp = 26;
  p.flow_label = 7;
  p.sequence = 0x0102030405060708ULL;
  p.prober_key = 0xa1a2a3a4a5a6a7a8ULL;
  p.t1_ns = 1'000'000'000;
  p.prober_nic_clock = true;
  return p;
}

std::string Message(const absl::StatusOr<ProbePacket>& p) { return std::string(p.status().message()); }

TEST(MeshProbePacket, TheHeaderLayoutIsPinned) {
  absl::StatusOr<std::vector<uint8_t>> bytes = EncodeProbe(ReplyTo(Request(64), 5, 9, false));
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  const std::vector<uint8_t> want = {
      'R', 'C', 'M', 'P', 1, 2, 0x01, 26,                  // magic, version, reply, prober's NIC clock, DSCP
      0, 0, 0, 64, 0, 0, 0, 7,                             // size, flow label
      1, 2, 3, 4, 5, 6, 7, 8,                              // sequence
      0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8,      // prober key
      0, 0, 0, 0, 0x3b, 0x9a, 0xca, 0x00,                  // t1 = 1e9
      0, 0, 0, 0, 0, 0, 0, 5,                              // t2
      0, 0, 0, 0, 0, 0, 0, 9,                              // t3
      0, 0, 0, 0, 0, 0, 0, 0};                             // reserved
  EXPECT_EQ(*bytes, want);
}

TEST(MeshProbePacket, RoundTripsAtEverySizeWithThePaddingPattern) {
  for (uint32_t size : {64u, 65u, 1024u, 4096u, 9000u}) {
    ProbePacket p = Request(size);
    absl::StatusOr<std::vector<uint8_t>> bytes = EncodeProbe(p);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    ASSERT_EQ(bytes->size(), size);
    if (size > 64) {
      EXPECT_EQ((*bytes)[64], (64 + p.sequence % 251) % 251);
    }
    absl::StatusOr<ProbePacket> back = DecodeProbe(*bytes);
    ASSERT_TRUE(back.ok()) << size << ": " << back.status();
    EXPECT_EQ(*back, p);
  }
}

TEST(MeshProbePacket, CorruptedOrTruncatedMessagesAreRefused) {
  std::vector<uint8_t> good = *EncodeProbe(Request(1024));
  std::vector<uint8_t> b = good;
  b[700] ^= 0x10;
  absl::StatusOr<ProbePacket> got = DecodeProbe(b);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(Message(got), HasSubstr("padding: byte 700 of 1024 is 0x"));

  EXPECT_EQ(Message(DecodeProbe(std::span(good).first(1000))),
            "size: 1024 bytes stated, 1000 received (truncated or padded)");
  EXPECT_EQ(Message(DecodeProbe(std::span(good).first(63))), "probe: 63 bytes, shorter than its 64-byte header");
  // One byte of the header changed at a time: offset, value, the refusal.
  const struct {
    size_t offset;
    uint8_t value;
    const char* error;
  } kCases[] = {
      {0, 'X', "probe: not a roced mesh probe (magic)"},
      {4, 2, "version: 2 is not supported; allowed 1"},
      {5, 3, "type: 3 is not a probe type; allowed 1, 2"},
      {6, 0x80, "flags: 0x80 has unknown bits"},
      {7, 64, "dscp: 64 is out of range; allowed 0-63"},
      {60, 1, "reserved: byte 60 is not zero"},
  };
  for (const auto& c : kCases) {
    b = good;
    b[c.offset] = c.value;
    EXPECT_EQ(Message(DecodeProbe(b)), c.error) << "offset " << c.offset;
  }
}

TEST(MeshProbePacket, EncodeRefusesSizesAndDscpsOutOfRange) {
  ProbePacket p = Request(63);
  EXPECT_EQ(EncodeProbe(p).status().message(), "size: 63 is out of range; allowed 64-9000 bytes");
  p.size = 9001;
  EXPECT_EQ(EncodeProbe(p).status().message(), "size: 9001 is out of range; allowed 64-9000 bytes");
  p = Request(64);
  p.dscp = 64;
  EXPECT_EQ(EncodeProbe(p).status().message(), "dscp: 64 is out of range; allowed 0-63");
}

TEST(MeshProbePacket, NetworkRttSubtractsTheRespondersTime) {
  ProbePacket req = Request(64);  // t1 = 1 s on the prober's clock
  // The responder's clock is hours off: only its own difference counts.
  ProbePacket reply = ReplyTo(req, 7'200'000'000'000ULL, 7'200'000'030'000ULL, true);
  EXPECT_TRUE(reply.responder_nic_clock);
  EXPECT_EQ(reply.sequence, req.sequence);
  std::optional<uint64_t> rtt = NetworkRttNs(reply, 1'000'045'000);  // 45 us after t1
  ASSERT_TRUE(rtt.has_value());
  EXPECT_EQ(*rtt, 15'000u);  // 45 us minus the 30 us it held the probe
  EXPECT_FALSE(NetworkRttNs(reply, 999'000'000).has_value());    // received before it was sent
  EXPECT_FALSE(NetworkRttNs(reply, 1'000'020'000).has_value());  // held longer than the round trip
  ProbePacket backwards = ReplyTo(req, 10, 5, false);
  EXPECT_FALSE(NetworkRttNs(backwards, 1'000'045'000).has_value());
}

}  // namespace
}  // namespace roced::mesh

// Fuzz target 8: a UD message as it reaches the mesh's queue pair from
// anywhere on the fabric (any host can send to a UD QPN whose Q_Key it
// knows). DecodeProbe, then what the prober and responder do with what it
// decoded. Checks what mesh/probe_packet.h promises: a message that decodes
// encodes back to the very same bytes (the layout has one spelling), its
// reply round-trips too, and the round trip from any stamps is either
// refused or at most the whole time between t1 and t4.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "fuzz_check.h"
#include "mesh/probe_packet.h"

namespace mesh = roced::mesh;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<mesh::ProbePacket> p = mesh::DecodeProbe(std::span<const uint8_t>(data, size));
  if (!p.ok()) return 0;
  absl::StatusOr<std::vector<uint8_t>> again = mesh::EncodeProbe(*p);
  FUZZ_CHECK(again.ok(), "a decoded probe encodes");
  FUZZ_CHECK(again->size() == size && std::memcmp(again->data(), data, size) == 0,
             "a decoded probe encodes to the same bytes");
  const mesh::ProbePacket reply = mesh::ReplyTo(*p, p->t2_ns, p->t3_ns, p->responder_nic_clock);
  absl::StatusOr<std::vector<uint8_t>> reply_bytes = mesh::EncodeProbe(reply);
  FUZZ_CHECK(reply_bytes.ok(), "the reply encodes");
  absl::StatusOr<mesh::ProbePacket> reply_back = mesh::DecodeProbe(*reply_bytes);
  FUZZ_CHECK(reply_back.ok() && *reply_back == reply, "the reply round-trips");
  const uint64_t t4 = p->t1_ns + (p->sequence & 0xffffffff);
  if (std::optional<uint64_t> rtt = mesh::NetworkRttNs(*p, t4)) {
    FUZZ_CHECK(t4 >= p->t1_ns && *rtt <= t4 - p->t1_ns, "the network round trip is within t1..t4");
  }
  return 0;
}

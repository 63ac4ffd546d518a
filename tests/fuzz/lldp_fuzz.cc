// Fuzz target 7: LLDP frames as a switch (or anything on the link) sends
// them to the agent's AF_PACKET sockets: DecodeLldpFrame, then the metric
// families built from what it decoded. The input is one received frame.
// Checks what hal/lldp.h promises of every decoded neighbour: strings that
// are valid UTF-8 (a proto string field and a Prometheus label must be) and
// no longer than the bound, the application table and notes bounded, PFC
// and ETS shaped as the protocol defines; and that it serializes.
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_check.h"
#include "hal/lldp.h"
#include "metrics/lldp_collector.h"
#include "util/utf8.h"

namespace hal = roced::hal;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  roced::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto n = hal::DecodeLldpFrame(std::span<const uint8_t>(data, size));
  if (!n.ok()) return 0;
  for (const std::string* s : {&n->chassis_id(), &n->port_id(), &n->system_name(), &n->port_description()}) {
    FUZZ_CHECK(roced::util::IsValidUtf8(*s), "decoded text is valid UTF-8");
    // Escaping may grow a byte to four (\xHH), never more.
    FUZZ_CHECK(s->size() <= 4 * hal::kMaxLldpText + 32, "decoded text is bounded");
  }
  FUZZ_CHECK(static_cast<size_t>(n->apps_size()) <= hal::kMaxLldpApps, "application table is bounded");
  FUZZ_CHECK(n->notes_size() <= 16, "notes are bounded");
  for (const auto& a : n->apps()) FUZZ_CHECK(a.priority() < 8 && a.protocol() <= 0xffff, "app entry in range");
  if (n->has_pfc()) FUZZ_CHECK(n->pfc().enabled() <= 0xff && n->pfc().capability() <= 0xff, "PFC in range");
  if (n->has_ets()) FUZZ_CHECK(n->ets().priority_to_tc_size() == 8, "ETS has 8 priorities");
  std::string bytes;
  FUZZ_CHECK(n->SerializeToString(&bytes), "the neighbour serializes");
  n->set_netdev("eth0");
  roced::metrics::LldpCollector::Families({*n});
  return 0;
}

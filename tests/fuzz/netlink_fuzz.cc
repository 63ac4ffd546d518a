// Fuzz target 6: what the kernel sends on netlink sockets, as lib/hal
// parses it. The first input byte picks the reader, the rest is the bytes of
// one recv():
//   0 a DCB_CMD_IEEE_GET exchange: ScanDcbMessages + ParseIeeeGetReply
//     (DcbNetlink::Get)
//   1 a SET/DEL exchange: ScanDcbMessages + ParseSetStatus (the driver's
//     status byte; DcbNetlink::SetEts/SetPfc/AddApps/DelApps)
//   2 rtnetlink link/DCB notifications: ScanLinkEvents (LinkMonitor)
// A read past the end of what the kernel sent is an ASan report.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_check.h"
#include "hal/dcb_netlink.h"
#include "hal/link_monitor.h"

namespace hal = roced::hal;

namespace {

// The sequence number of the request the seeds answer.
constexpr uint32_t kSeq = 1;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  roced::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // A heap block of exactly the message bytes (malloc-aligned, as the
  // buffer nl_recv allocates is): ASan's redzone starts at its end.
  std::vector<unsigned char> bytes(data + 1, data + size);
  unsigned char* buf = bytes.data();
  const size_t len = bytes.size();
  switch (data[0] % 3) {
    case 0: {
      hal::DcbReading reading;
      (void)hal::ScanDcbMessages(buf, len, kSeq,
                                 [&](nlmsghdr* reply) { (void)hal::ParseIeeeGetReply(reply, &reading); });
      break;
    }
    case 1:
      (void)hal::ScanDcbMessages(buf, len, kSeq, [](nlmsghdr* reply) { (void)hal::ParseSetStatus(reply); });
      break;
    case 2: {
      hal::LinkEvents events = hal::ScanLinkEvents(buf, len);
      FUZZ_CHECK(events.messages == 0 || !events.reasons.empty(), "a message has a reason");
      FUZZ_CHECK(events.reasons.size() <= 4, "at most the four kinds");
      FUZZ_CHECK(events.messages <= len / 16, "no more messages than headers fit");
      break;
    }
  }
  return 0;
}

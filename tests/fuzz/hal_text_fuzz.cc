// Fuzz target 5: the parsers of lib/hal for what the kernel writes into
// sysfs files and ethtool replies. The first input byte picks the parser,
// the rest is the text (or bytes) the kernel would have given it:
//   0 ParseCounterText     counters/ and hw_counters/ files
//   1 ParsePfcStatName     ethtool -S names (mlx5 PFC statistics)
//   2 ParsePcieSpeedGts, ParseRateGbps   current_link_speed, ports/N/rate
//   3 ParsePortState, ParsePhysState     ports/N/state, phys_state
//   4 ParseGidType, GidToIp              gid_attrs/types/N (+ link_layer), gids/N
//   5 LooksLikePciBdf      the `device` link's target
//   6 ParseHugepageDirName kernel/mm/hugepages/ entries
//   7 DecodeStatNames      an ETHTOOL_GSTRINGS reply (4 bytes of count first)
//   8 RoceMtuForNetdevMtu  class/net/X/mtu (4 bytes)
// Each checks what its header promises of the result.
#include <arpa/inet.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fuzz_check.h"
#include "hal/counter_files.h"
#include "hal/ethtool_stats.h"
#include "hal/hugepage_pools.h"
#include "hal/sysfs_discovery.h"

namespace hal = roced::hal;

namespace {

uint32_t TakeU32(std::string* bytes) {
  uint32_t v = 0;
  std::memcpy(&v, bytes->data(), std::min(bytes->size(), sizeof(v)));
  bytes->erase(0, std::min(bytes->size(), sizeof(v)));
  return v;
}

bool IsIp(const std::string& text) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, text.c_str(), buf) == 1 || inet_pton(AF_INET6, text.c_str(), buf) == 1;
}

void Counter(const std::string& text) {
  uint64_t value = 0;
  if (!hal::ParseCounterText(text.data(), text.size(), &value)) return;
  const std::string printed = absl::StrCat(value, "\n");
  uint64_t again = 0;
  FUZZ_CHECK(hal::ParseCounterText(printed.data(), printed.size(), &again) && again == value,
             "a counter's value, written as sysfs writes it, parses back");
}

void Gid(const std::string& text) {
  // "type\nlink_layer" for the type; the whole text as a GID.
  const size_t nl = text.find('\n');
  const std::string type = text.substr(0, nl);
  const std::string link_layer = nl == std::string::npos ? "" : text.substr(nl + 1);
  (void)hal::ParseGidType(type, link_layer);
  const std::string ip = hal::GidToIp(text);
  FUZZ_CHECK(ip.empty() || IsIp(ip), "GidToIp gives an IP address or nothing");
}

void StatNames(std::string bytes) {
  const uint32_t count = TakeU32(&bytes) % 4096;
  std::vector<std::string> names = hal::DecodeStatNames(bytes.data(), bytes.size(), count);
  FUZZ_CHECK(names.size() == std::min<size_t>(count, bytes.size() / 32), "one name per whole entry");
  for (const std::string& name : names) {
    FUZZ_CHECK(name.size() <= 32 && name.find('\0') == std::string::npos, "a name is one NUL-free entry");
    auto pfc = hal::ParsePfcStatName(name);
    FUZZ_CHECK(!pfc || !pfc->priority || *pfc->priority < 8, "priorities are 0-7");
  }
}

void NetdevMtu(std::string bytes) {
  const uint32_t mtu = TakeU32(&bytes);
  const uint32_t roce = hal::RoceMtuForNetdevMtu(mtu);
  FUZZ_CHECK(roce == 0 || roce == 256 || roce == 512 || roce == 1024 || roce == 2048 || roce == 4096,
             "an IB MTU");
  FUZZ_CHECK(roce == 0 || roce + 96 <= mtu, "that fits the netdev MTU with the RoCE headers");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  roced::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 9) {
    case 0:
      Counter(text);
      break;
    case 1: {
      auto name = hal::ParsePfcStatName(text);
      FUZZ_CHECK(!name || !name->priority || *name->priority < 8, "priorities are 0-7");
      break;
    }
    case 2: {
      const double gts = hal::ParsePcieSpeedGts(text);
      const double gbps = hal::ParseRateGbps(text);
      FUZZ_CHECK(std::isfinite(gts) && gts >= 0 && std::isfinite(gbps) && gbps >= 0,
                 "speeds are finite and not negative");
      break;
    }
    case 3:
      (void)hal::ParsePortState(text);
      (void)hal::ParsePhysState(text);
      break;
    case 4:
      Gid(text);
      break;
    case 5:
      (void)hal::LooksLikePciBdf(text);
      break;
    case 6:
      if (auto kb = hal::ParseHugepageDirName(text)) {
        FUZZ_CHECK(hal::ParseHugepageDirName(absl::StrCat("hugepages-", *kb, "kB")) == kb,
                   "the kernel's spelling of the size parses back");
      }
      break;
    case 7:
      StatNames(text);
      break;
    case 8:
      NetdevMtu(text);
      break;
  }
  return 0;
}

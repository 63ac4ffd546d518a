#include "probe/random_id.h"

#include <atomic>
#include <cstdint>
#include <random>

#include "absl/strings/str_cat.h"

namespace roced::probe {

std::string RandomId() {
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  uint64_t r = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ (counter.fetch_add(1) << 48);
  return absl::StrCat(absl::Hex(r, absl::kZeroPad16));
}

}  // namespace roced::probe

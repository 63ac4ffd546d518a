#include "hal/arp_sysctls.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "util/fs.h"

namespace roced::hal {

namespace {

std::optional<int> ReadInt(const std::string& path) {
  auto text = util::ReadFileTrimmed(path);
  int v = 0;
  if (!text.ok() || !absl::SimpleAtoi(*text, &v)) return std::nullopt;
  return v;
}

std::optional<int> Max(const std::optional<int>& a, const std::optional<int>& b) {
  if (!a || !b) return std::nullopt;
  return std::max(*a, *b);
}

}  // namespace

ArpSysctls ReadArpSysctls(const Paths& paths, const std::string& conf) {
  const std::string dir = absl::StrCat(paths.procfs, "/sys/net/ipv4/conf/", conf, "/");
  ArpSysctls s;
  s.arp_ignore = ReadInt(dir + "arp_ignore");
  s.arp_announce = ReadInt(dir + "arp_announce");
  s.rp_filter = ReadInt(dir + "rp_filter");
  return s;
}

ArpSysctls EffectiveArpSysctls(const ArpSysctls& netdev, const ArpSysctls& all) {
  ArpSysctls s;
  s.arp_ignore = Max(netdev.arp_ignore, all.arp_ignore);
  s.arp_announce = Max(netdev.arp_announce, all.arp_announce);
  s.rp_filter = Max(netdev.rp_filter, all.rp_filter);
  return s;
}

}  // namespace roced::hal

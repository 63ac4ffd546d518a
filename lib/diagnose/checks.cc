#include "diagnose/checks.h"

#include <algorithm>
#include <functional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "diagnose/check.h"
#include "util/ip_subnet.h"

namespace roced::diagnose {

void Ctx::Add(roced::v1::Severity sev, const std::string& object, const std::string& summary,
              const std::string& detail, const std::string& remedy) const {
  roced::v1::Finding f;
  f.set_check(check);
  f.set_severity(sev);
  f.set_object(object);
  f.set_summary(summary);
  f.set_detail(detail);
  f.set_remedy(remedy);
  out->push_back(std::move(f));
}

void ForEachRocePort(const Inputs& in,
                     const std::function<void(const roced::v1::RdmaDevice&, const roced::v1::Port&)>& fn) {
  for (const auto& dev : in.state.devices()) {
    for (const auto& port : dev.ports()) {
      if (port.link_layer() == "Ethernet") fn(dev, port);
    }
  }
}

std::string PortName(const roced::v1::RdmaDevice& dev, const roced::v1::Port& port) {
  return absl::StrCat(dev.name(), "/", port.number(),
                      port.netdev().empty() ? "" : absl::StrCat(" (", port.netdev(), ")"));
}

std::string Prios(uint8_t mask) {
  std::vector<int> p;
  for (int i = 0; i < 8; ++i) {
    if (mask & (1u << i)) p.push_back(i);
  }
  return absl::StrCat("[", absl::StrJoin(p, ","), "]");
}

std::vector<std::pair<std::string, const reconcile::InterfaceObserved*>> RoceNetdevs(const Inputs& in) {
  std::vector<std::pair<std::string, const reconcile::InterfaceObserved*>> out;
  std::set<std::string> seen;
  ForEachRocePort(in, [&](const roced::v1::RdmaDevice&, const roced::v1::Port& port) {
    if (port.netdev().empty() || !seen.insert(port.netdev()).second) return;
    auto it = in.netdevs.find(port.netdev());
    out.emplace_back(port.netdev(), it == in.netdevs.end() ? nullptr : &it->second);
  });
  return out;
}

std::optional<uint32_t> RoceTos(const Inputs& in, const std::string& netdev, const reconcile::InterfaceObserved& obs) {
  if (obs.roce_tos && *obs.roce_tos != 0) return *obs.roce_tos;
  for (const auto& iface : in.state.config().desired().interfaces()) {
    if (iface.match().netdev() == netdev && iface.roce().has_default_tos()) return iface.roce().default_tos();
  }
  return std::nullopt;
}

std::string PageSize(uint64_t kb) {
  return kb >= 1048576 ? absl::StrCat(kb / 1048576, "Gi") : absl::StrCat(kb / 1024, "Mi");
}

const char* NoRocePort(const Inputs& in) {
  bool any = false;
  ForEachRocePort(in, [&](const roced::v1::RdmaDevice&, const roced::v1::Port&) { any = true; });
  return any ? nullptr : "no RoCE port was discovered";
}
const char* NoObservedNetdev(const Inputs& in) {
  if (const char* r = NoRocePort(in)) return r;
  for (const auto& [netdev, obs] : RoceNetdevs(in)) {
    if (obs != nullptr) return nullptr;
  }
  return "the kernel state (DCB, ECN, rdma_cm, MTU) of no RoCE netdev could be read";
}
const char* NoDevice(const Inputs& in) {
  return in.state.devices().empty() ? "no RDMA device was discovered" : nullptr;
}

std::map<std::string, std::string> PeerAddresses(const Inputs& in) {
  std::map<std::string, std::string> out;
  for (const auto& p : in.state.probes()) {
    if (!p.peer_data_ip().empty()) out.emplace(p.peer_data_ip(), p.peer());
  }
  for (const auto& p : in.state.config().desired().probes().peers()) {
    if (auto ip = util::IpOfHostPort(p.address())) out.emplace(*ip, p.name().empty() ? p.address() : p.name());
  }
  return out;
}

namespace {

// Every check, in the order findings are produced.
const std::vector<const Check*>& All() {
  static const std::vector<const Check*> checks = {
      &kPortStateCheck,
      &kRoceV2GidCheck,
      &kRoceModeCheck,
      &kPfcDscpCheck,
      &kSwitchAlignmentCheck,
      &kDcbxModeCheck,
      &kEcnCheck,
      &kMtuCheck,
      &kPcieCheck,
      &kHugepagesCheck,
      &kMemlockCheck,
      &kProbesCheck,
      &kConvergedCheck,
      &kPauseWithoutEcnCheck,
      &kLinkFlapsCheck,
      &kProbeBaselineCheck,
      &kNumaLocalityCheck,
      &kNeighboursCheck,
      &kArpFluxCheck,
      &kClockSyncCheck,
  };
  return checks;
}

}  // namespace

const std::vector<CheckInfo>& Checks() {
  static const std::vector<CheckInfo> infos = [] {
    std::vector<CheckInfo> v;
    for (const Check* c : All()) v.push_back(c->info);
    return v;
  }();
  return infos;
}

absl::StatusOr<std::vector<roced::v1::Finding>> Run(const Inputs& inputs, const std::vector<std::string>& only,
                                                    std::vector<SkippedCheck>* skipped) {
  std::set<std::string> wanted(only.begin(), only.end());
  for (const auto& name : wanted) {
    bool known = std::any_of(All().begin(), All().end(), [&](const Check* c) { return name == c->info.name; });
    if (!known) {
      std::vector<std::string> names;
      for (const Check* c : All()) names.push_back(c->info.name);
      return absl::InvalidArgumentError(
          absl::StrCat("checks: unknown check '", name, "'; known: ", absl::StrJoin(names, ", ")));
    }
  }
  std::vector<roced::v1::Finding> findings;
  for (const Check* c : All()) {
    if (!wanted.empty() && !wanted.count(c->info.name)) continue;
    if (const char* why = c->skip != nullptr ? c->skip(inputs) : nullptr) {
      if (skipped != nullptr) skipped->push_back({c->info.name, why});
      continue;
    }
    c->run(Ctx{inputs, &findings, c->info.name});
  }
  std::stable_sort(findings.begin(), findings.end(),
                   [](const roced::v1::Finding& a, const roced::v1::Finding& b) { return a.severity() > b.severity(); });
  return findings;
}

}  // namespace roced::diagnose

#include "reconcile/plan.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/validate.h"
#include "model/match.h"

namespace roced::reconcile {

const char* FieldPath(Field f) {
  switch (f) {
    case Field::kHugepages: return "hugepages.count";
    case Field::kMtu: return "mtu";
    case Field::kDscp: return "qos.dscp_to_priority";
    case Field::kEts: return "qos.ets";
    case Field::kPfc: return "qos.pfc";
    case Field::kEcnNp: return "qos.ecn.np_priorities";
    case Field::kEcnRp: return "qos.ecn.rp_priorities";
    case Field::kRoceMode: return "roce.default_mode";
    case Field::kRoceTos: return "roce.default_tos";
  }
  return "?";
}

namespace {

std::string Mask(uint64_t mask) {
  std::vector<int> prios;
  for (int p = 0; p < 8; ++p) {
    if (mask & (1u << p)) prios.push_back(p);
  }
  return absl::StrCat("[", absl::StrJoin(prios, ","), "]");
}

std::string Arr(const std::array<uint8_t, 8>& a) {
  std::vector<int> v(a.begin(), a.end());
  return absl::StrCat("[", absl::StrJoin(v, ","), "]");
}

std::string TsaName(uint8_t tsa) {
  switch (tsa) {
    case 0: return "strict";
    case 1: return "cbs";
    case 2: return "ets";
    case 255: return "vendor";
    default: return absl::StrCat(tsa);
  }
}

uint8_t TsaKernel(roced::v1::Tsa tsa) {
  switch (tsa) {
    case roced::v1::TSA_ETS: return 2;
    case roced::v1::TSA_VENDOR: return 255;
    default: return 0;
  }
}

uint8_t MaskOf(const google::protobuf::RepeatedField<uint32_t>& prios) {
  uint8_t m = 0;
  for (uint32_t p : prios) {
    if (p < 8) m |= static_cast<uint8_t>(1u << p);
  }
  return m;
}

}  // namespace

std::string Render(const Value& v, Field f) {
  if (std::holds_alternative<std::monostate>(v)) return "(unknown)";
  if (const auto* n = std::get_if<uint64_t>(&v)) {
    switch (f) {
      case Field::kEcnNp:
      case Field::kEcnRp: return Mask(*n);
      case Field::kRoceMode:
        return *n == roced::v1::ROCE_MODE_V2 ? "v2" : *n == roced::v1::ROCE_MODE_V1 ? "v1" : "?";
      default: return absl::StrCat(*n);
    }
  }
  if (const auto* m = std::get_if<DscpMap>(&v)) {
    if (m->empty()) return "{} (trust pcp)";
    std::vector<std::string> parts;
    for (const auto& [dscp, prio] : *m) parts.push_back(absl::StrCat(dscp, ":", prio));
    return absl::StrCat("{", absl::StrJoin(parts, " "), "}");
  }
  if (const auto* e = std::get_if<Ets>(&v)) {
    std::vector<std::string> tsa;
    for (uint8_t t : e->tsa) tsa.push_back(TsaName(t));
    return absl::StrCat("prio_tc ", Arr(e->prio_tc), " bw ", Arr(e->tc_bw), " tsa [",
                        absl::StrJoin(tsa, ","), "]");
  }
  if (const auto* p = std::get_if<Pfc>(&v)) {
    return absl::StrCat("priorities ", Mask(p->enabled), " delay ", p->delay);
  }
  return "?";
}

roced::v1::PlanStep ToProto(const Step& step) {
  roced::v1::PlanStep p;
  p.set_object(step.object);
  p.set_field(FieldPath(step.field));
  p.set_current(Render(step.current, step.field));
  p.set_wanted(Render(step.wanted, step.field));
  p.set_disruptive(step.disruptive);
  p.set_note(step.note);
  return p;
}

DscpMap DefaultDscpMap() {
  DscpMap m;
  for (uint8_t d = 0; d < 64; ++d) m[d] = d / 8;
  return m;
}

absl::StatusOr<std::vector<Target>> ResolveTargets(
    const roced::v1::NodeConfig& config, const std::vector<roced::v1::RdmaDevice>& devices,
    const std::function<bool(const std::string&)>& netdev_exists) {
  std::vector<Target> targets;
  for (int i = 0; i < config.interfaces_size(); ++i) {
    const auto& match = config.interfaces(i).match();
    Target t;
    t.config_index = static_cast<size_t>(i);
    std::string path = absl::StrCat("interfaces[", i, "].match");
    bool found = false;
    for (const auto& d : devices) {
      for (const auto& p : d.ports()) {
        if (model::MatchesPort(match, d, p) && !found) {
          t.netdev = p.netdev();
          t.rdma_device = d.name();
          t.port = p.number();
          found = true;
        }
      }
    }
    if (!found && match.key_case() == roced::v1::InterfaceMatch::kNetdev &&
        netdev_exists(match.netdev())) {
      t.netdev = match.netdev();
      found = true;
    }
    if (!found) {
      std::string what;
      switch (match.key_case()) {
        case roced::v1::InterfaceMatch::kNetdev:
          what = absl::StrCat(path, ".netdev: no netdev '", match.netdev(), "' on this node");
          break;
        case roced::v1::InterfaceMatch::kRdmaDevice:
          what = absl::StrCat(path, ".rdma_device: no RDMA device '", match.rdma_device(), "' on this node");
          break;
        case roced::v1::InterfaceMatch::kPci:
          what = absl::StrCat(path, ".pci: no RDMA device at PCI address ", match.pci());
          break;
        default: what = absl::StrCat(path, ": empty match"); break;
      }
      return absl::InvalidArgumentError(what);
    }
    if (t.netdev.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": RDMA device ", t.rdma_device, " has no netdev"));
    }
    targets.push_back(std::move(t));
  }
  return targets;
}

std::vector<HugepagePool> HugepagePools(const roced::v1::NodeConfig& config) {
  std::vector<HugepagePool> pools;
  for (const auto& hp : config.hugepages()) {
    pools.push_back({model::HugepageSizeKb(hp.size()), hp.has_numa_node() ? hp.numa_node() : -1});
  }
  return pools;
}

namespace {

class Planner {
 public:
  explicit Planner(Plan* plan) : plan_(plan) {}

  // Compares one field; adds a step when it differs.
  template <typename T>
  void Compare(Field field, size_t target, const std::string& object, const std::optional<T>& observed,
               const T& wanted, bool disruptive = false, const std::string& note = "") {
    roced::v1::FieldStatus fs;
    fs.set_object(object);
    fs.set_field(FieldPath(field));
    fs.set_desired(Render(Value(wanted), field));
    if (!observed.has_value()) {
      fs.set_observed("(not supported)");
      fs.set_sync(roced::v1::FIELD_SYNC_UNSUPPORTED);
      fs.set_message(absl::StrCat(object, " has no control for ", FieldPath(field)));
      plan_->fields.push_back(std::move(fs));
      return;
    }
    fs.set_observed(Render(Value(*observed), field));
    if (*observed == wanted) {
      fs.set_sync(roced::v1::FIELD_SYNC_IN_SYNC);
      plan_->fields.push_back(std::move(fs));
      return;
    }
    fs.set_sync(roced::v1::FIELD_SYNC_DRIFTED);
    plan_->fields.push_back(std::move(fs));
    Step s;
    s.field = field;
    s.target = target;
    s.object = object;
    s.current = Value(*observed);
    s.wanted = Value(wanted);
    s.disruptive = disruptive;
    s.note = note;
    plan_->steps.push_back(std::move(s));
  }

 private:
  Plan* plan_;
};

}  // namespace

Plan ComputePlan(const roced::v1::NodeConfig& desired, const std::vector<Target>& targets,
                 const Observed& observed) {
  Plan plan;
  Planner p(&plan);

  for (const auto& hp : desired.hugepages()) {
    HugepagePool pool{model::HugepageSizeKb(hp.size()), hp.has_numa_node() ? hp.numa_node() : -1};
    auto it = observed.hugepages.find(pool);
    std::optional<uint64_t> have = it == observed.hugepages.end() ? std::nullopt : it->second;
    std::string object = absl::StrCat(pool.numa_node >= 0 ? absl::StrCat("node", pool.numa_node, "/") : "",
                                      "hugepages-", pool.size_kb, "kB");
    size_t before = plan.steps.size();
    p.Compare<uint64_t>(Field::kHugepages, 0, object, have, hp.count());
    if (plan.steps.size() > before) plan.steps.back().pool = pool;
  }

  for (size_t i = 0; i < targets.size() && i < observed.interfaces.size(); ++i) {
    const Target& t = targets[i];
    const auto& cfg = desired.interfaces(static_cast<int>(t.config_index));
    const InterfaceObserved& obs = observed.interfaces[i];
    const std::string& nd = t.netdev;
    if (cfg.has_mtu()) {
      std::optional<uint64_t> have = obs.mtu ? std::optional<uint64_t>(*obs.mtu) : std::nullopt;
      p.Compare<uint64_t>(Field::kMtu, i, nd, have, cfg.mtu(), true,
                          "an MTU change can reset the link on some NICs");
    }
    if (cfg.has_qos()) {
      const auto& q = cfg.qos();
      std::optional<DscpMap> want_dscp;
      if (q.trust() == roced::v1::TRUST_PCP) {
        want_dscp = DscpMap{};
      } else if (q.dscp_to_priority_size() > 0) {
        DscpMap m;
        for (const auto& [d, prio] : q.dscp_to_priority()) m[static_cast<uint8_t>(d)] = static_cast<uint8_t>(prio);
        want_dscp = m;
      } else if (q.trust() == roced::v1::TRUST_DSCP) {
        // Trust follows the DSCP app table on upstream mlx5: keep whatever
        // map is there, or install the default one if there is none.
        want_dscp = obs.dscp && !obs.dscp->empty() ? *obs.dscp : DefaultDscpMap();
      }
      if (want_dscp) {
        p.Compare<DscpMap>(Field::kDscp, i, nd, obs.dscp, *want_dscp, false,
                           "trust follows the DSCP app table: entries mean DSCP trust, none means PCP");
      }
      if (q.has_ets() && q.ets().priority_to_tc_size() == 8 && q.ets().tc_bandwidth_size() == 8 &&
          q.ets().tsa_size() == 8) {
        Ets e;
        for (int k = 0; k < 8; ++k) {
          e.prio_tc[k] = static_cast<uint8_t>(q.ets().priority_to_tc(k));
          e.tc_bw[k] = static_cast<uint8_t>(q.ets().tc_bandwidth(k));
          e.tsa[k] = TsaKernel(q.ets().tsa(k));
        }
        p.Compare<Ets>(Field::kEts, i, nd, obs.ets, e);
      }
      if (q.has_pfc()) {
        Pfc want;
        want.enabled = MaskOf(q.pfc().priorities());
        want.delay = q.pfc().has_delay() ? static_cast<uint16_t>(q.pfc().delay())
                                         : (obs.pfc ? obs.pfc->delay : 0);
        p.Compare<Pfc>(Field::kPfc, i, nd, obs.pfc, want, true,
                       "mlx5 flaps the link when pfc_en changes");
      }
      if (q.has_ecn()) {
        auto widen = [](const std::optional<uint8_t>& v) {
          return v ? std::optional<uint64_t>(*v) : std::nullopt;
        };
        p.Compare<uint64_t>(Field::kEcnNp, i, nd, widen(obs.ecn_np), MaskOf(q.ecn().np_priorities()));
        p.Compare<uint64_t>(Field::kEcnRp, i, nd, widen(obs.ecn_rp), MaskOf(q.ecn().rp_priorities()));
      }
    }
    if (cfg.has_roce()) {
      std::string object = t.rdma_device.empty() ? nd : absl::StrCat(t.rdma_device, "/", t.port);
      if (cfg.roce().default_mode() != roced::v1::ROCE_MODE_UNSPECIFIED) {
        std::optional<uint64_t> have =
            obs.roce_mode ? std::optional<uint64_t>(*obs.roce_mode) : std::nullopt;
        p.Compare<uint64_t>(Field::kRoceMode, i, object, have,
                            static_cast<uint64_t>(cfg.roce().default_mode()));
      }
      if (cfg.roce().has_default_tos()) {
        std::optional<uint64_t> have = obs.roce_tos ? std::optional<uint64_t>(*obs.roce_tos) : std::nullopt;
        p.Compare<uint64_t>(Field::kRoceTos, i, object, have, cfg.roce().default_tos());
      }
    }
  }
  // One fixed order, whatever order the config listed things in.
  std::stable_sort(plan.steps.begin(), plan.steps.end(),
                   [](const Step& a, const Step& b) { return a.field < b.field; });
  return plan;
}

}  // namespace roced::reconcile

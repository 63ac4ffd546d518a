#include "reconcile/plan.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hal/driver_profile.h"
#include "model/match.h"
#include "model/validate.h"
#include "reconcile/fields.h"

namespace roced::reconcile {

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

std::string PoolObject(const HugepagePool& pool) {
  return absl::StrCat(pool.numa_node >= 0 ? absl::StrCat("node", pool.numa_node, "/") : "", "hugepages-",
                      pool.size_kb, "kB");
}

// The object an interface field's statuses and steps name.
std::string InterfaceObject(const FieldSpec& spec, const Target& t) {
  if (spec.scope == Scope::kRdmaPort && !t.rdma_device.empty()) return absl::StrCat(t.rdma_device, "/", t.port);
  return t.netdev;
}

class Planner {
 public:
  explicit Planner(Plan* plan) : plan_(plan) {}

  void Pool(const roced::v1::HugepageConfig& hp, const Observed& observed) {
    HugepagePool pool{model::HugepageSizeKb(hp.size()), hp.has_numa_node() ? hp.numa_node() : -1};
    auto it = observed.hugepages.find(pool);
    std::optional<uint64_t> have = it == observed.hugepages.end() ? std::nullopt : it->second;
    const FieldSpec& spec = Spec(Field::kHugepages);
    Compare(spec, 0, pool, PoolObject(pool), spec.observe(nullptr, have), Value(uint64_t{hp.count()}));
  }

  // Every interface field `config` manages, in table order, as the port's
  // driver allows (hal/driver_profile.h).
  void Interface(size_t index, const Target& t, const roced::v1::InterfaceConfig& config,
                 const InterfaceObserved& obs) {
    const hal::DriverProfile& profile = hal::ProfileFor(obs.driver);
    const bool wants_host =
        config.has_qos() && config.qos().dcbx_mode() == roced::v1::DCBX_MODE_HOST && profile.host_mode_by_setdcbx;
    // The NIC's firmware (or its LLDP agent) runs DCBX and roced cannot
    // take host mode: what the host wrote would be replaced by what the
    // switch advertises, or the driver refuses it, so the DCB fields are
    // reported, not written.
    const bool firmware_dcbx = obs.dcbx_host == false && !wants_host;
    for (const FieldSpec& spec : Fields()) {
      if (spec.scope == Scope::kHugepagePool) continue;
      std::optional<Value> want = spec.desired(config, obs);
      if (!want) continue;
      const std::string object = InterfaceObject(spec, t);
      // What the driver can never do comes first: no agent's hand-over
      // would make it manageable. It holds convergence back only where the
      // config requires the field (qos.ecn.require): a fleet's config may
      // name fields some of its drivers lack.
      const hal::FieldSurface surface = hal::SurfaceOf(profile, spec.path, true);
      if (!surface.manageable) {
        NotManageable(spec, object, spec.observe(&obs, std::nullopt), *want, profile, surface,
                      spec.required && spec.required(config));
        continue;
      }
      if (firmware_dcbx && spec.dcbx_owned) {
        FirmwareOwned(spec, object, spec.observe(&obs, std::nullopt), *want, profile, t.netdev);
        continue;
      }
      const bool required = !spec.required || spec.required(config);
      std::string adapted;
      if (spec.field == Field::kEts) adapted = AdaptEts(profile, config, obs, &std::get<Ets>(*want));
      Compare(spec, index, HugepagePool{}, object, spec.observe(&obs, std::nullopt), *want, required, adapted);
    }
  }

 private:
  // Compares one field; adds a step when it differs.
  // `required`: the node lacking the control holds convergence back.
  // `adapted`: how the driver made roced adapt the wanted value (shown as
  // the status's message when nothing else is to be said).
  void Compare(const FieldSpec& spec, size_t target, const HugepagePool& pool, const std::string& object,
               const Value& observed, const Value& wanted, bool required = true, const std::string& adapted = "") {
    roced::v1::FieldStatus fs;
    fs.set_message(adapted);
    fs.set_object(object);
    fs.set_field(spec.path);
    fs.set_desired(Render(wanted, spec.field));
    if (std::holds_alternative<std::monostate>(observed)) {
      fs.set_observed("(not supported)");
      fs.set_sync(required ? roced::v1::FIELD_SYNC_UNSUPPORTED : roced::v1::FIELD_SYNC_NOT_MANAGEABLE);
      fs.set_message(required ? absl::StrCat(object, " has no control for ", spec.path)
                              : absl::StrCat(object, "'s driver has no control for ", spec.path,
                                             " (the inbox mlx5 driver has none; MLNX_OFED adds it): reported, "
                                             "not written; the rest of the config converges without it"));
      plan_->fields.push_back(std::move(fs));
      return;
    }
    fs.set_observed(Render(observed, spec.field));
    if (Satisfies(spec, observed, wanted)) {
      fs.set_sync(roced::v1::FIELD_SYNC_IN_SYNC);
      plan_->fields.push_back(std::move(fs));
      return;
    }
    fs.set_sync(roced::v1::FIELD_SYNC_DRIFTED);
    plan_->fields.push_back(std::move(fs));
    Step s;
    s.field = spec.field;
    s.target = target;
    s.pool = pool;
    s.object = object;
    s.current = observed;
    s.wanted = wanted;
    s.disruptive = spec.disruptive;
    s.note = spec.note;
    plan_->steps.push_back(std::move(s));
  }

  // ice in L3 DSCP mode (the config's DSCP map, or the port's when the
  // config leaves it) keeps priority i on TC i and ignores a written map
  // (ice_dcbnl_setets). The config's classes are translated onto that map:
  // TC p takes the tsa of the class priority p was given, and an ETS
  // class's bandwidth is shared among its priorities (the remainder to the
  // last), so each priority keeps its scheduling and share. Said in the
  // field's status.
  static std::string AdaptEts(const hal::DriverProfile& profile, const roced::v1::InterfaceConfig& config,
                              const InterfaceObserved& obs, Ets* want) {
    if (!profile.dscp_mode_fixes_priority_map) return "";
    std::optional<Value> dscp = Spec(Field::kDscp).desired(config, obs);
    const bool dscp_mode = dscp ? !std::get<DscpMap>(*dscp).empty() : obs.dscp && !obs.dscp->empty();
    if (!dscp_mode) return "";
    const Ets asked = *want;
    std::array<int, 8> members{};
    for (uint8_t p = 0; p < 8; ++p) members[asked.prio_tc[p] & 7]++;
    std::array<int, 8> given{};
    for (uint8_t p = 0; p < 8; ++p) {
      const uint8_t c = asked.prio_tc[p] & 7;
      want->prio_tc[p] = p;
      want->tsa[p] = asked.tsa[c];
      want->tc_bw[p] = 0;
      if (asked.tsa[c] != kTsaEts) continue;
      const int share = asked.tc_bw[c] / members[c];
      const bool last = ++given[c] == members[c];
      want->tc_bw[p] = static_cast<uint8_t>(last ? asked.tc_bw[c] - share * (members[c] - 1) : share);
    }
    if (want->prio_tc == asked.prio_tc && want->tc_bw == asked.tc_bw && want->tsa == asked.tsa) return "";
    return absl::StrCat(profile.name, " keeps priority i on traffic class i in L3 DSCP mode (ice_dcbnl_setets): ",
                        "qos.ets is applied translated, each priority on its own class with its class's tsa and an ",
                        "equal part of its class's bandwidth");
  }

  // A field the port's driver gives roced no way to manage: reported with
  // the driver's reason, never written; it holds convergence back only
  // when the config requires it (`required`).
  void NotManageable(const FieldSpec& spec, const std::string& object, const Value& observed, const Value& wanted,
                     const hal::DriverProfile& profile, const hal::FieldSurface& surface, bool required) {
    roced::v1::FieldStatus fs;
    fs.set_object(object);
    fs.set_field(spec.path);
    fs.set_desired(Render(wanted, spec.field));
    const bool unknown = std::holds_alternative<std::monostate>(observed);
    fs.set_observed(unknown ? "(not supported)" : Render(observed, spec.field));
    if (!unknown && Satisfies(spec, observed, wanted)) {
      fs.set_sync(roced::v1::FIELD_SYNC_IN_SYNC);
    } else {
      fs.set_sync(required ? roced::v1::FIELD_SYNC_UNSUPPORTED : roced::v1::FIELD_SYNC_NOT_MANAGEABLE);
      fs.set_message(absl::StrCat(object, ": ", profile.name, " gives roced no control of ", spec.path, " (",
                                  surface.surface, "): ", surface.note,
                                  required ? "" : "; reported, not written: the rest of the config converges without it"));
    }
    plan_->fields.push_back(std::move(fs));
  }

  // A DCB field while the firmware runs DCBX: its status says so, with what
  // the port has and the operator's fix for the driver; no step.
  void FirmwareOwned(const FieldSpec& spec, const std::string& object, const Value& observed, const Value& wanted,
                     const hal::DriverProfile& profile, const std::string& netdev) {
    roced::v1::FieldStatus fs;
    fs.set_object(object);
    fs.set_field(spec.path);
    fs.set_desired(Render(wanted, spec.field));
    fs.set_observed(std::holds_alternative<std::monostate>(observed) ? "(not supported)"
                                                                      : Render(observed, spec.field));
    const bool same = !std::holds_alternative<std::monostate>(observed) && Satisfies(spec, observed, wanted);
    fs.set_sync(same ? roced::v1::FIELD_SYNC_IN_SYNC : roced::v1::FIELD_SYNC_UNSUPPORTED);
    if (!same) {
      fs.set_message(absl::StrCat(object, "'s DCB belongs to ", profile.firmware_agent,
                                  " (getdcbx: no host mode), which replaces or refuses host writes of ", spec.path,
                                  "; to let roced manage it: ", hal::HostModeFix(profile, netdev)));
    }
    plan_->fields.push_back(std::move(fs));
  }

  Plan* plan_;
};

}  // namespace

Plan ComputePlan(const roced::v1::NodeConfig& desired, const std::vector<Target>& targets,
                 const Observed& observed) {
  Plan plan;
  Planner p(&plan);
  for (const auto& hp : desired.hugepages()) p.Pool(hp, observed);
  for (size_t i = 0; i < targets.size() && i < observed.interfaces.size(); ++i) {
    p.Interface(i, targets[i], desired.interfaces(static_cast<int>(targets[i].config_index)),
                observed.interfaces[i]);
  }
  // One fixed order, whatever order the config listed things in.
  std::stable_sort(plan.steps.begin(), plan.steps.end(),
                   [](const Step& a, const Step& b) { return a.field < b.field; });
  return plan;
}

}  // namespace roced::reconcile

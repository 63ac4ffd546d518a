#include "reconcile/plan.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

  // Every interface field `config` manages, in table order.
  void Interface(size_t index, const Target& t, const roced::v1::InterfaceConfig& config,
                 const InterfaceObserved& obs) {
    // The NIC's firmware runs DCBX and the config does not take host mode:
    // what the host wrote would be replaced by what the switch advertises
    // (a willing port), so the DCB fields are reported, not written.
    const bool firmware_dcbx =
        obs.dcbx_host == false && !(config.has_qos() && config.qos().dcbx_mode() == roced::v1::DCBX_MODE_HOST);
    for (const FieldSpec& spec : Fields()) {
      if (spec.scope == Scope::kHugepagePool) continue;
      std::optional<Value> want = spec.desired(config, obs);
      if (!want) continue;
      if (firmware_dcbx && spec.dcbx_owned) {
        FirmwareOwned(spec, InterfaceObject(spec, t), spec.observe(&obs, std::nullopt), *want);
        continue;
      }
      const bool required = !spec.required || spec.required(config);
      Compare(spec, index, HugepagePool{}, InterfaceObject(spec, t), spec.observe(&obs, std::nullopt), *want,
              required);
    }
  }

 private:
  // Compares one field; adds a step when it differs.
  // `required`: the node lacking the control holds convergence back.
  void Compare(const FieldSpec& spec, size_t target, const HugepagePool& pool, const std::string& object,
               const Value& observed, const Value& wanted, bool required = true) {
    roced::v1::FieldStatus fs;
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

  // A DCB field while the firmware runs DCBX: its status says so, with what
  // the port has; no step.
  void FirmwareOwned(const FieldSpec& spec, const std::string& object, const Value& observed, const Value& wanted) {
    roced::v1::FieldStatus fs;
    fs.set_object(object);
    fs.set_field(spec.path);
    fs.set_desired(Render(wanted, spec.field));
    fs.set_observed(std::holds_alternative<std::monostate>(observed) ? "(not supported)"
                                                                      : Render(observed, spec.field));
    const bool same = !std::holds_alternative<std::monostate>(observed) && Satisfies(spec, observed, wanted);
    fs.set_sync(same ? roced::v1::FIELD_SYNC_IN_SYNC : roced::v1::FIELD_SYNC_UNSUPPORTED);
    if (!same) {
      fs.set_message(absl::StrCat(object, "'s DCBX runs in the NIC firmware (getdcbx: no host mode), which "
                                  "replaces host writes of ", spec.path, " with what the switch advertises; "
                                  "set qos.dcbx_mode: host to let roced manage it"));
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

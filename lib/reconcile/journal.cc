#include "reconcile/journal.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "reconcile/fields.h"

namespace roced::reconcile {

namespace {

auto Key(const roced::v1::PriorValue& p) {
  return std::make_tuple(p.field(), p.netdev(), p.rdma_device(), p.port(), p.hugepage_size_kb(),
                         p.numa_node());
}

}  // namespace

std::vector<roced::v1::PriorValue> PriorValues(const Plan& plan, const std::vector<Target>& targets) {
  std::vector<roced::v1::PriorValue> out;
  for (const Step& s : plan.steps) {
    if (std::holds_alternative<std::monostate>(s.current)) continue;
    roced::v1::PriorValue p;
    p.set_field(FieldPath(s.field));
    p.set_object(s.object);
    const FieldSpec& spec = Spec(s.field);
    if (spec.scope == Scope::kHugepagePool) {
      p.set_hugepage_size_kb(s.pool.size_kb);
      p.set_numa_node(s.pool.numa_node);
    } else if (s.target < targets.size()) {
      const Target& t = targets[s.target];
      p.set_netdev(t.netdev);
      p.set_rdma_device(t.rdma_device);
      p.set_port(t.port);
    } else {
      continue;
    }
    spec.to_prior(s.current, &p);
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<roced::v1::PriorValue> MergePrior(const std::vector<roced::v1::PriorValue>& older,
                                              const std::vector<roced::v1::PriorValue>& newer) {
  std::vector<roced::v1::PriorValue> out = older;
  for (const auto& n : newer) {
    bool known = std::any_of(older.begin(), older.end(), [&](const auto& o) { return Key(o) == Key(n); });
    if (!known) out.push_back(n);
  }
  return out;
}

Plan RestorePlan(const std::vector<roced::v1::PriorValue>& prior, NodeIo* io, std::vector<Target>* targets) {
  Plan plan;
  targets->clear();
  std::map<std::string, InterfaceObserved> observed;  // by netdev, read once
  for (const auto& p : prior) {
    const FieldSpec* spec = SpecByPath(p.field());
    if (spec == nullptr) continue;
    std::optional<Value> want = spec->from_prior(p);
    if (!want) continue;
    Step s;
    s.field = spec->field;
    s.object = p.object();
    s.wanted = *want;
    if (spec->scope == Scope::kHugepagePool) {
      s.pool = HugepagePool{p.hugepage_size_kb(), p.numa_node()};
      s.current = ObservedValue(s, nullptr, io->ObserveHugepages(s.pool));
    } else {
      if (p.netdev().empty()) continue;
      auto it = std::find_if(targets->begin(), targets->end(),
                             [&](const Target& t) { return t.netdev == p.netdev(); });
      if (it == targets->end()) {
        Target t;
        t.netdev = p.netdev();
        t.rdma_device = p.rdma_device();
        t.port = p.port() == 0 ? 1 : p.port();
        targets->push_back(t);
        it = targets->end() - 1;
      }
      s.target = static_cast<size_t>(it - targets->begin());
      auto [obs, fresh] = observed.try_emplace(p.netdev());
      if (fresh) obs->second = io->ObserveInterface(*it);
      s.current = ObservedValue(s, &obs->second, std::nullopt);
    }
    s.disruptive = spec->disruptive;
    s.note = "restoring the value from before the apply";
    if (std::holds_alternative<std::monostate>(s.current) || Satisfies(*spec, s.current, s.wanted)) continue;
    plan.steps.push_back(std::move(s));
  }
  std::stable_sort(plan.steps.begin(), plan.steps.end(),
                   [](const Step& a, const Step& b) { return a.field < b.field; });
  return plan;
}

}  // namespace roced::reconcile

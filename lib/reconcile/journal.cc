#include "reconcile/journal.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>

namespace roced::reconcile {

namespace {

constexpr Field kAllFields[] = {Field::kHugepages, Field::kMtu,   Field::kDscp,
                                Field::kEts,       Field::kPfc,   Field::kEcnNp,
                                Field::kEcnRp,     Field::kRoceMode, Field::kRoceTos};

std::optional<Field> FieldFromPath(const std::string& path) {
  for (Field f : kAllFields) {
    if (path == FieldPath(f)) return f;
  }
  return std::nullopt;
}

void SetValue(const Value& v, roced::v1::PriorValue* p) {
  if (const auto* n = std::get_if<uint64_t>(&v)) {
    p->set_number(*n);
  } else if (const auto* m = std::get_if<DscpMap>(&v)) {
    auto* out = p->mutable_dscp()->mutable_dscp_to_priority();
    for (const auto& [dscp, prio] : *m) (*out)[dscp] = prio;
  } else if (const auto* e = std::get_if<Ets>(&v)) {
    auto* out = p->mutable_ets();
    for (int k = 0; k < 8; ++k) {
      out->add_priority_to_tc(e->prio_tc[k]);
      out->add_tc_bandwidth(e->tc_bw[k]);
      out->add_tsa(e->tsa[k]);
    }
  } else if (const auto* f = std::get_if<Pfc>(&v)) {
    p->mutable_pfc()->set_enabled(f->enabled);
    p->mutable_pfc()->set_delay(f->delay);
  }
}

// nullopt for an entry this build cannot read back (a value of the wrong
// shape for its field, e.g. from a hand-edited journal).
std::optional<Value> GetValue(const roced::v1::PriorValue& p, Field field) {
  switch (p.value_case()) {
    case roced::v1::PriorValue::kNumber:
      if (field == Field::kDscp || field == Field::kEts || field == Field::kPfc) return std::nullopt;
      return Value(p.number());
    case roced::v1::PriorValue::kDscp: {
      if (field != Field::kDscp) return std::nullopt;
      DscpMap m;
      for (const auto& [dscp, prio] : p.dscp().dscp_to_priority()) {
        if (dscp > 63 || prio > 7) return std::nullopt;
        m[static_cast<uint8_t>(dscp)] = static_cast<uint8_t>(prio);
      }
      return Value(m);
    }
    case roced::v1::PriorValue::kEts: {
      const auto& e = p.ets();
      if (field != Field::kEts || e.priority_to_tc_size() != 8 || e.tc_bandwidth_size() != 8 ||
          e.tsa_size() != 8) {
        return std::nullopt;
      }
      Ets out;
      for (int k = 0; k < 8; ++k) {
        out.prio_tc[k] = static_cast<uint8_t>(e.priority_to_tc(k));
        out.tc_bw[k] = static_cast<uint8_t>(e.tc_bandwidth(k));
        out.tsa[k] = static_cast<uint8_t>(e.tsa(k));
      }
      return Value(out);
    }
    case roced::v1::PriorValue::kPfc:
      if (field != Field::kPfc || p.pfc().enabled() > 0xff || p.pfc().delay() > 0xffff) return std::nullopt;
      return Value(Pfc{static_cast<uint8_t>(p.pfc().enabled()), static_cast<uint16_t>(p.pfc().delay())});
    case roced::v1::PriorValue::VALUE_NOT_SET:
      break;
  }
  return std::nullopt;
}

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
    if (s.field == Field::kHugepages) {
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
    SetValue(s.current, &p);
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
    std::optional<Field> field = FieldFromPath(p.field());
    if (!field) continue;
    std::optional<Value> want = GetValue(p, *field);
    if (!want) continue;
    Step s;
    s.field = *field;
    s.object = p.object();
    s.wanted = *want;
    if (*field == Field::kHugepages) {
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
    s.disruptive = s.field == Field::kPfc || s.field == Field::kMtu;
    s.note = "restoring the value from before the apply";
    if (std::holds_alternative<std::monostate>(s.current) || s.current == s.wanted) continue;
    plan.steps.push_back(std::move(s));
  }
  std::stable_sort(plan.steps.begin(), plan.steps.end(),
                   [](const Step& a, const Step& b) { return a.field < b.field; });
  return plan;
}

}  // namespace roced::reconcile

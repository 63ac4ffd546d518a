#include "reconcile/apply.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "reconcile/plan.h"
#include "util/log.h"
#include "util/proto_time.h"

namespace roced::reconcile {

Observed ObserveAll(NodeIo* io, const roced::v1::NodeConfig& config,
                    const std::vector<Target>& targets) {
  Observed obs;
  for (const Target& t : targets) obs.interfaces.push_back(io->ObserveInterface(t));
  for (const HugepagePool& pool : HugepagePools(config)) obs.hugepages[pool] = io->ObserveHugepages(pool);
  return obs;
}

Value ObservedValue(const Step& step, const InterfaceObserved* i,
                    const std::optional<uint64_t>& hugepages) {
  auto u = [](const auto& opt) -> Value {
    if (!opt) return std::monostate{};
    return static_cast<uint64_t>(*opt);
  };
  switch (step.field) {
    case Field::kHugepages: return u(hugepages);
    case Field::kMtu: return u(i->mtu);
    case Field::kDscp: return i->dscp ? Value(*i->dscp) : Value(std::monostate{});
    case Field::kEts: return i->ets ? Value(*i->ets) : Value(std::monostate{});
    case Field::kPfc: return i->pfc ? Value(*i->pfc) : Value(std::monostate{});
    case Field::kEcnNp: return u(i->ecn_np);
    case Field::kEcnRp: return u(i->ecn_rp);
    case Field::kRoceMode: return u(i->roce_mode);
    case Field::kRoceTos: return u(i->roce_tos);
  }
  return std::monostate{};
}

namespace {

Value ReadBack(NodeIo* io, const Step& step, const std::vector<Target>& targets) {
  if (step.field == Field::kHugepages) return ObservedValue(step, nullptr, io->ObserveHugepages(step.pool));
  InterfaceObserved obs = io->ObserveInterface(targets[step.target]);
  return ObservedValue(step, &obs, std::nullopt);
}

// Moves one field from `from` to `to` (both of the step's value type).
absl::Status Write(NodeIo* io, const Target* t, const Step& step, const Value& from, const Value& to) {
  auto num = [&](const Value& v) { return std::get<uint64_t>(v); };
  switch (step.field) {
    case Field::kHugepages: return io->SetHugepages(step.pool, num(to));
    case Field::kMtu: return io->SetMtu(*t, static_cast<uint32_t>(num(to)));
    case Field::kDscp: return io->SetDscp(*t, std::get<DscpMap>(from), std::get<DscpMap>(to));
    case Field::kEts: return io->SetEts(*t, std::get<Ets>(to));
    case Field::kPfc: return io->SetPfc(*t, std::get<Pfc>(to));
    case Field::kEcnNp:
      return io->SetEcn(*t, hal::EcnRole::kNotificationPoint, static_cast<uint8_t>(num(from)),
                        static_cast<uint8_t>(num(to)));
    case Field::kEcnRp:
      return io->SetEcn(*t, hal::EcnRole::kReactionPoint, static_cast<uint8_t>(num(from)),
                        static_cast<uint8_t>(num(to)));
    case Field::kRoceMode: return io->SetRoceMode(*t, static_cast<roced::v1::RoceMode>(num(to)));
    case Field::kRoceTos: return io->SetRoceTos(*t, static_cast<uint32_t>(num(to)));
  }
  return absl::InternalError("unknown field");
}

// Writes `to` and reads back until it shows. Returns the last value read.
absl::Status WriteAndVerify(NodeIo* io, const Step& step, const std::vector<Target>& targets,
                            const Value& from, const Value& to, const ApplyOptions& opts,
                            Value* last_read) {
  const Target* target = step.field == Field::kHugepages ? nullptr : &targets[step.target];
  if (absl::Status s = Write(io, target, step, from, to); !s.ok()) return s;
  for (int attempt = 0; attempt < opts.verify_attempts; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(absl::ToChronoNanoseconds(opts.verify_interval));
    *last_read = ReadBack(io, step, targets);
    if (*last_read == to) return absl::OkStatus();
  }
  return absl::DataLossError(absl::StrCat("read back ", Render(*last_read, step.field), ", wanted ",
                                          Render(to, step.field), " (the driver did not apply it)"));
}

}  // namespace

roced::v1::ApplyResult ApplyPlan(const Plan& plan, const std::vector<Target>& targets, NodeIo* io,
                                 const ApplyOptions& opts) {
  roced::v1::ApplyResult result;
  absl::Time start = absl::Now();
  // Indices of steps whose write went through (fully or in part): what a
  // rollback must undo.
  std::vector<size_t> touched;
  bool failed = false;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& step = plan.steps[i];
    roced::v1::StepResult* r = result.add_steps();
    *r->mutable_step() = ToProto(step);
    if (failed) {
      r->set_outcome(roced::v1::STEP_OUTCOME_SKIPPED);
      continue;
    }
    Value read;
    absl::Status s = WriteAndVerify(io, step, targets, step.current, step.wanted, opts, &read);
    if (s.ok()) {
      r->set_outcome(roced::v1::STEP_OUTCOME_APPLIED);
      touched.push_back(i);
      continue;
    }
    if (step.field == Field::kHugepages && absl::IsDataLoss(s)) {
      // The kernel reserved what it could; keep it and say how much.
      r->set_outcome(roced::v1::STEP_OUTCOME_PARTIAL);
      r->set_code(static_cast<int32_t>(absl::StatusCode::kResourceExhausted));
      r->set_error(absl::StrCat("wanted ", Render(step.wanted, step.field), " pages, the kernel reserved ",
                                Render(read, step.field)));
      // Pages were reserved: a later failure must give them back too.
      touched.push_back(i);
      continue;
    }
    r->set_outcome(absl::IsDataLoss(s) ? roced::v1::STEP_OUTCOME_NOT_VERIFIED
                                       : roced::v1::STEP_OUTCOME_FAILED);
    r->set_error(std::string(s.message()));
    r->set_code(static_cast<int32_t>(s.code()));
    LOG_WARNING << "apply: " << step.object << " " << FieldPath(step.field) << ": " << s.message()
                << "; rolling back";
    touched.push_back(i);  // a failed write may have half-applied (app table, sysfs bits)
    failed = true;
  }
  if (failed) {
    result.set_rolled_back(true);
    for (auto it = touched.rbegin(); it != touched.rend(); ++it) {
      const Step& step = plan.steps[*it];
      roced::v1::StepResult* r = result.mutable_steps(static_cast<int>(*it));
      Value now = ReadBack(io, step, targets);
      Value read;
      absl::Status s = now == step.current
                           ? absl::OkStatus()
                           : WriteAndVerify(io, step, targets, now, step.current, opts, &read);
      if (r->outcome() == roced::v1::STEP_OUTCOME_APPLIED ||
          r->outcome() == roced::v1::STEP_OUTCOME_PARTIAL) {
        r->set_outcome(s.ok() ? roced::v1::STEP_OUTCOME_ROLLED_BACK : roced::v1::STEP_OUTCOME_FAILED);
      }
      if (!s.ok()) {
        r->set_error(absl::StrCat(r->error().empty() ? "" : r->error() + "; ",
                                  "rollback failed: ", s.message()));
        LOG_ERROR << "rollback of " << step.object << " " << FieldPath(step.field)
                  << " failed: " << s.message();
      }
    }
  }
  result.set_success(!failed);
  *result.mutable_duration() = util::ToProto(absl::Now() - start);
  return result;
}

}  // namespace roced::reconcile

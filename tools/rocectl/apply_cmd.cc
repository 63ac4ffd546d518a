// `rocectl apply -f FILE` (see apply_cmd.h).
#include "tools/rocectl/apply_cmd.h"

#include <iostream>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "model/config_limits.h"
#include "model/config_yaml.h"
#include "model/confirm_policy.h"
#include "rollout/rollout.h"
#include "model/validate.h"
#include "roced/v1/agent.grpc.pb.h"
#include "tools/rocectl/call.h"
#include "util/fs.h"

namespace roced::ctl {

void RegisterApplyFlags(ApplyFlags* f, util::ArgParser* p) {
  p->AddString("file", &f->file, "FILE", "apply: the NodeConfig YAML to apply ('-' reads stdin).", 'f');
  p->AddBool("dry-run", &f->dry_run, "apply: print the plan against the node now; change nothing.");
  p->AddDuration("confirm-timeout", &f->confirm_timeout, "DUR",
                 "apply: make the change provisional; unless `rocectl confirm` follows within DUR "
                 "the agent rolls back to the previous config by itself (`rocectl rollback`: at once). "
                 "Not with --confirm-policy.");
  p->AddString("confirm-policy", &f->confirm_policy, "SPEC|FILE",
               "apply: make the change provisional and let the agent judge it: it confirms the change "
               "itself once every gate held for the window and returns to the previous config as soon "
               "as one fails. A YAML file, or a spec such as "
               "'window=60s,converged,no-pfc-storm,mesh-loss=0.01,mesh-p99=1.5,probe=node3' (window "
               "10s-1h; at least one gate). Without a probe= or mesh gate, the config's first two "
               "probes.peers are probed (warned when it has none). Not with --confirm-timeout.");
  p->AddString("expected-generation", &f->expected_generation, "N",
               "apply: refuse (ABORTED) unless the agent's accepted generation is N, so two writers "
               "cannot overwrite each other unknowingly.");
}

namespace {
const char* OutcomeName(roced::v1::StepOutcome o) {
  switch (o) {
    case roced::v1::STEP_OUTCOME_APPLIED: return "applied";
    case roced::v1::STEP_OUTCOME_FAILED: return "FAILED";
    case roced::v1::STEP_OUTCOME_NOT_VERIFIED: return "NOT VERIFIED";
    case roced::v1::STEP_OUTCOME_ROLLED_BACK: return "rolled back";
    case roced::v1::STEP_OUTCOME_SKIPPED: return "skipped";
    case roced::v1::STEP_OUTCOME_PARTIAL: return "PARTIAL";
    default: return "?";
  }
}
}  // namespace

bool HasDifference(const roced::v1::ApplyConfigResponse& r) {
  return !r.plan().steps().empty() || !r.not_held().empty() || !r.no_longer_managed().empty() ||
         r.mode_before() != r.mode_after();
}

int ApplyExitCode(const roced::v1::ApplyConfigResponse& r, bool dry_run) {
  if (dry_run) return HasDifference(r) ? kExitFindings : kExitOk;
  return r.result().success() ? kExitOk : kExitFailed;
}

namespace {
std::string ModeWord(roced::v1::Mode m) { return m == roced::v1::MODE_OBSERVE ? "observe" : "enforce"; }

// What the plan's steps do not show: the mode, fields stopped, fields the
// node cannot hold.
std::string RestOfDifference(const roced::v1::ApplyConfigResponse& r, bool dry_run) {
  std::string out;
  if (r.mode_before() != r.mode_after()) {
    absl::StrAppend(&out, "Mode: ", ModeWord(r.mode_before()), " -> ", ModeWord(r.mode_after()),
                    r.mode_after() == roced::v1::MODE_OBSERVE ? " (drift is reported, no longer corrected)" : "",
                    "\n");
  }
  if (!r.no_longer_managed().empty()) {
    absl::StrAppend(&out, "No longer managed (left as they are", dry_run ? ", if applied" : "", "):\n");
    for (const auto& f : r.no_longer_managed()) absl::StrAppend(&out, "  - ", f.object(), " ", f.field(), "\n");
  }
  int unsupported = 0;
  for (const auto& f : r.not_held()) {
    if (f.sync() == roced::v1::FIELD_SYNC_UNSUPPORTED) ++unsupported;
  }
  if (!r.not_held().empty()) absl::StrAppend(&out, "Not held on this node:\n");
  for (const auto& f : r.not_held()) {
    absl::StrAppend(&out, "  ! ", f.object(), " ", f.field(),
                    f.sync() == roced::v1::FIELD_SYNC_UNSUPPORTED ? ": unsupported" : ": not manageable",
                    f.message().empty() ? "" : ": " + f.message(), "\n");
  }
  if (unsupported > 0) {
    absl::StrAppend(&out, "The config cannot converge here: ", unsupported,
                    " managed field(s) unsupported (`rocectl status` shows them).\n");
  }
  return out;
}
}  // namespace

std::string PlanText(const roced::v1::ApplyConfigResponse& r, bool dry_run, const roced::v1::ConfirmPolicy* policy) {
  std::string out;
  for (const auto& w : r.warnings()) absl::StrAppend(&out, "warning: ", w.path(), ": ", w.message(), "\n");
  if (!HasDifference(r)) {
    absl::StrAppend(&out, "No changes: the node already matches this config.\n");
  } else if (r.plan().steps().empty()) {
    absl::StrAppend(&out, dry_run ? "No steps to write (dry run, nothing changed), but:\n" : "No steps to write, but:\n");
  } else {
    absl::StrAppend(&out, dry_run ? "Plan (dry run, nothing changed):\n" : "Plan:\n");
    for (int i = 0; i < r.plan().steps_size(); ++i) {
      const auto& s = r.plan().steps(i);
      absl::StrAppend(&out, "  ~ ", s.object(), " ", s.field(), "\n      - ", s.current(), "\n      + ",
                      s.wanted(), "\n");
      if (s.disruptive()) absl::StrAppend(&out, "      ! disruptive: ", s.note(), "\n");
      if (!dry_run && i < r.result().steps_size()) {
        const auto& sr = r.result().steps(i);
        absl::StrAppend(&out, "      = ", OutcomeName(sr.outcome()));
        if (!sr.error().empty()) absl::StrAppend(&out, ": ", sr.error());
        absl::StrAppend(&out, "\n");
      }
    }
  }
  absl::StrAppend(&out, RestOfDifference(r, dry_run));
  if (!dry_run) {
    if (r.result().success()) {
      absl::StrAppend(&out, "Accepted as generation ", r.generation(), ".\n");
      if (r.has_confirm_deadline() && policy != nullptr) {
        absl::StrAppend(&out, "Provisional under the confirm policy (", model::DescribeConfirmPolicy(*policy),
                        "): the agent confirms it by itself once every gate held for the window, or rolls "
                        "back by itself as soon as one fails; `rocectl status` shows the gates.\n");
      } else if (r.has_confirm_deadline()) {
        absl::StrAppend(&out, "Provisional: run `rocectl confirm ", r.generation(),
                        "` before the deadline or the agent rolls back by itself.\n");
      }
    } else {
      bool undo_failed = false;
      for (const auto& sr : r.result().steps()) {
        undo_failed |= absl::StrContains(sr.error(), "rollback failed");
      }
      if (undo_failed) {
        absl::StrAppend(&out, "Apply failed and its ROLLBACK FAILED for the steps marked above: the node is "
                              "partly changed; generation ", r.generation(), " stays in force.\n");
      } else {
        absl::StrAppend(&out, "Apply failed; every step was rolled back and generation ", r.generation(),
                        " stays in force.\n");
      }
    }
  }
  return out;
}

namespace {

// --confirm-policy FILE: a spec is a line; 64 KiB is far more than any.
constexpr size_t kMaxConfirmPolicyBytes = 64u << 10;

// Standard input, at most kMaxConfigBytes + 1 bytes of it (DecodeYamlConfig
// refuses more).
std::string ReadStdinBounded() {
  std::string text(model::config_limits::kMaxConfigBytes + 1, '\0');
  std::cin.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(std::cin.gcount()));
  return text;
}

}  // namespace

absl::StatusOr<roced::v1::NodeConfig> LoadNodeConfig(const std::string& file) {
  std::string text;
  if (file == "-") {
    text = ReadStdinBounded();
  } else {
    // A regular file of at most the size the agent accepts (over gRPC too),
    // refused before it is read and before anything connects.
    auto t = util::ReadRegularFile(file, model::config_limits::kMaxConfigBytes, "config file");
    if (!t.ok()) return t.status();
    text = *t;
  }
  // Validate here first so errors point at lines and columns of the file.
  std::vector<roced::v1::ValidationIssue> issues;
  auto decoded = model::DecodeYamlConfig(text, &issues);
  if (decoded.ok()) model::ValidateConfig(decoded->config, &decoded->positions, &issues);
  if (!decoded.ok() || model::HasErrors(issues)) {
    std::vector<roced::v1::ValidationIssue> errors;
    for (const auto& i : issues) {
      if (i.severity() == roced::v1::SEVERITY_ERROR) errors.push_back(i);
    }
    return absl::InvalidArgumentError(model::FormatIssues(file, errors));
  }
  return decoded->config;
}

absl::StatusOr<roced::v1::ConfirmPolicy> LoadConfirmPolicy(const std::string& value) {
  std::string text = value;
  // A spec never names a file by accident: it has '=' and ',' in it.
  if (util::PathExists(value)) {
    auto t = util::ReadRegularFile(value, kMaxConfirmPolicyBytes, "confirm policy file");
    if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("--confirm-policy: ", t.status().message()));
    text = *t;
  }
  auto policy = model::ParseConfirmPolicy(text);
  if (!policy.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--confirm-policy ", value, ": ", policy.status().message()));
  }
  return policy;
}

namespace {

// The request from the flags (the config already loaded); false after
// saying why (a usage error).
bool FillRequest(const ApplyFlags& flags, roced::v1::ApplyConfigRequest* req) {
  req->set_dry_run(flags.dry_run);
  if (!flags.expected_generation.empty()) {
    uint64_t g;
    if (!absl::SimpleAtoi(flags.expected_generation, &g)) {
      std::cerr << "rocectl: --expected-generation: '" << flags.expected_generation
                << "' is not a non-negative integer\n";
      return false;
    }
    req->set_expected_generation(g);
  }
  if (!flags.confirm_policy.empty() && flags.confirm_timeout > absl::ZeroDuration()) {
    std::cerr << "rocectl: --confirm-policy and --confirm-timeout: give one of them (a change is confirmed "
                 "either by the agent judging the policy or by `rocectl confirm` in time)\n";
    return false;
  }
  if (!flags.confirm_policy.empty()) {
    auto policy = LoadConfirmPolicy(flags.confirm_policy);
    if (!policy.ok()) {
      std::cerr << "rocectl: " << policy.status().message() << "\n";
      return false;
    }
    *req->mutable_confirm_policy() = *policy;
  }
  if (flags.confirm_timeout > absl::ZeroDuration()) {
    absl::Duration d = flags.confirm_timeout;
    req->mutable_confirm_timeout()->set_seconds(absl::IDivDuration(d, absl::Seconds(1), &d));
    req->mutable_confirm_timeout()->set_nanos(static_cast<int32_t>(absl::ToInt64Nanoseconds(d)));
  }
  return true;
}

// Converged and no-PFC-storm send nothing: a policy without a probe or
// mesh gate gets the config's first two probes.peers (the peers this node
// exchanges RoCE with) as its probe gate, and without any, a warning says
// nothing judges traffic.
void JudgeTraffic(roced::v1::ApplyConfigRequest* req) {
  roced::v1::ConfirmPolicy* policy = req->mutable_confirm_policy();
  if (model::SendsTraffic(*policy)) return;
  for (const auto& peer : req->config().probes().peers()) {
    if (policy->probe_peers_size() >= static_cast<int>(rollout::kDefaultProbePeers)) break;
    policy->add_probe_peers(peer.name().empty() ? peer.address() : peer.name());
  }
  if (!model::SendsTraffic(*policy)) {
    std::cerr << "rocectl: warning: no gate of this confirm policy sends traffic (no probe= or mesh gate, and the "
                 "config names no probes.peers): a config that breaks RoCE traffic is confirmed as long as it "
                 "converges\n";
  }
}

}  // namespace

int RunApply(const CommandContext& ctx, const ApplyFlags& flags, const std::vector<std::string>& args) {
  if (flags.file.empty() || !args.empty()) {
    std::cerr << "rocectl: usage: rocectl apply -f FILE [--dry-run] [--confirm-timeout DUR | "
                 "--confirm-policy SPEC|FILE] [--expected-generation N]\n";
    return kExitUsage;
  }
  roced::v1::ApplyConfigRequest req;
  if (!FillRequest(flags, &req)) return kExitUsage;
  auto config = LoadNodeConfig(flags.file);
  if (!config.ok()) {
    const bool issues = config.status().code() == absl::StatusCode::kInvalidArgument;
    if (issues && ctx.output == Output::kTable) {  // the validation report, one issue a line
      std::cerr << config.status().message();
      return kExitFailed;
    }
    return Fail(ctx, absl::StripTrailingAsciiWhitespace(config.status().message()));
  }
  *req.mutable_config() = *config;
  if (req.has_confirm_policy()) JudgeTraffic(&req);
  roced::v1::ApplyConfigResponse resp;
  grpc::Status st = CallAgent(ctx.channel, ctx.timeout, &roced::v1::Agent::Stub::ApplyConfig, req, &resp);
  if (!st.ok()) return FailRpc(ctx, st);
  Print(ctx.output, resp, [&] {
    return PlanText(resp, flags.dry_run, req.has_confirm_policy() ? &req.confirm_policy() : nullptr);
  });
  return ApplyExitCode(resp, flags.dry_run);
}

CommandRun BindApply(util::ArgParser* parser) {
  auto flags = std::make_shared<ApplyFlags>();
  RegisterApplyFlags(flags.get(), parser);
  return [flags](const CommandContext& ctx, const std::vector<std::string>& args) {
    return RunApply(ctx, *flags, args);
  };
}

}  // namespace roced::ctl

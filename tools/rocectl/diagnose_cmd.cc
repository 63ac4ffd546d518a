#include "tools/rocectl/diagnose_cmd.h"

#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "diagnose/checks.h"
#include "roced/v1/agent.grpc.pb.h"
#include "tools/rocectl/call.h"

namespace roced::ctl {

void RegisterDiagnoseFlags(DiagnoseFlags* f, util::ArgParser* p) {
  // The names from the check table itself, so the help cannot miss one.
  std::string names;
  for (const auto& check : diagnose::Checks()) absl::StrAppend(&names, names.empty() ? "" : ", ", check.name);
  p->AddString("checks", &f->checks, "NAMES",
               absl::StrCat("diagnose: run only these checks (comma-separated: ", names, ")."));
}

namespace {
const char* SeverityWord(roced::v1::Severity s) {
  switch (s) {
    case roced::v1::SEVERITY_ERROR: return "ERROR";
    case roced::v1::SEVERITY_WARNING: return "WARNING";
    case roced::v1::SEVERITY_INFO: return "info";
    default: return "?";
  }
}
}  // namespace

int DiagnoseExitCode(const roced::v1::DiagnoseResponse& r) {
  for (const auto& f : r.findings()) {
    if (f.severity() == roced::v1::SEVERITY_ERROR) return kExitFindings;
  }
  // Nothing ran: nothing can be said to have passed.
  return r.checks_run() == 0 ? kExitFindings : kExitOk;
}

namespace {
std::string SkippedText(const roced::v1::DiagnoseResponse& r) {
  std::string out;
  for (const auto& k : r.skipped()) absl::StrAppend(&out, "skipped  ", k.check(), ": ", k.reason(), "\n");
  return out;
}
}  // namespace

std::string DiagnoseText(const roced::v1::DiagnoseResponse& r) {
  const std::string skipped = SkippedText(r);
  if (r.checks_run() == 0) {
    return absl::StrCat(skipped, "No check ran: none had anything to look at (skipped above), so nothing passed.\n");
  }
  if (r.findings().empty()) {
    if (r.skipped().empty()) return absl::StrCat("No findings: all ", r.checks_run(), " checks passed.\n");
    return absl::StrCat(skipped, "No findings in the ", r.checks_run(), " checks that ran; ", r.skipped_size(),
                        " skipped (above).\n");
  }
  std::string out;
  int counts[4] = {0, 0, 0, 0};
  for (const auto& f : r.findings()) {
    const int s = static_cast<int>(f.severity());
    if (s >= 0 && s < 4) ++counts[s];
    absl::StrAppend(&out, SeverityWord(f.severity()), "  ", f.check(), "  ", f.object(), ": ", f.summary(), "\n");
    if (!f.detail().empty()) absl::StrAppend(&out, "    why: ", f.detail(), "\n");
    if (!f.remedy().empty()) absl::StrAppend(&out, "    fix: ", f.remedy(), "\n");
  }
  absl::StrAppend(&out, skipped, counts[roced::v1::SEVERITY_ERROR], " error(s), ",
                  counts[roced::v1::SEVERITY_WARNING], " warning(s), ", counts[roced::v1::SEVERITY_INFO],
                  " note(s) from ", r.checks_run(), " check(s)", r.skipped().empty() ? "" : ", others skipped",
                  ".\n");
  return out;
}

int RunDiagnose(const CommandContext& ctx, const DiagnoseFlags& flags, const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "rocectl: diagnose takes no arguments (got '" << args[0] << "'; use --checks NAMES)\n";
    return kExitUsage;
  }
  roced::v1::DiagnoseRequest req;
  for (absl::string_view name : absl::StrSplit(flags.checks, ',', absl::SkipWhitespace())) {
    req.add_checks(std::string(name));
  }
  roced::v1::DiagnoseResponse resp;
  grpc::Status s = CallAgent(ctx.channel, ctx.timeout, &roced::v1::Agent::Stub::Diagnose, req, &resp);
  if (!s.ok()) {
    // An unknown check name is the caller's usage error.
    if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT) return Fail(ctx, DescribeRpcError(s, ctx), kExitUsage);
    return FailRpc(ctx, s);
  }
  Print(ctx.output, resp, [&] { return DiagnoseText(resp); });
  return DiagnoseExitCode(resp);
}

CommandRun BindDiagnose(util::ArgParser* parser) {
  auto flags = std::make_shared<DiagnoseFlags>();
  RegisterDiagnoseFlags(flags.get(), parser);
  return [flags](const CommandContext& ctx, const std::vector<std::string>& args) {
    return RunDiagnose(ctx, *flags, args);
  };
}

}  // namespace roced::ctl

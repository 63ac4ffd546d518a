#include "tools/rocectl/diagnose_cmd.h"

#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "roced/v1/agent.grpc.pb.h"

namespace roced::ctl {

void RegisterDiagnoseFlags(DiagnoseFlags* f, util::ArgParser* p) {
  p->AddString("checks", &f->checks, "NAMES",
               "diagnose: run only these checks (comma-separated: port_state, roce_v2_gid, roce_mode, "
               "pfc_dscp, switch_alignment, ecn, mtu, pcie, hugepages, memlock, probes, converged, "
               "pause_without_ecn, link_flaps, probe_baseline, numa_locality, neighbours, arp_flux, "
               "clock_sync).");
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

std::string DiagnoseText(const roced::v1::DiagnoseResponse& r) {
  if (r.findings().empty()) return "No findings: every check passed.\n";
  std::string out;
  int counts[4] = {0, 0, 0, 0};
  for (const auto& f : r.findings()) {
    const int s = static_cast<int>(f.severity());
    if (s >= 0 && s < 4) ++counts[s];
    absl::StrAppend(&out, SeverityWord(f.severity()), "  ", f.check(), "  ", f.object(), ": ", f.summary(), "\n");
    if (!f.detail().empty()) absl::StrAppend(&out, "    why: ", f.detail(), "\n");
    if (!f.remedy().empty()) absl::StrAppend(&out, "    fix: ", f.remedy(), "\n");
  }
  absl::StrAppend(&out, counts[roced::v1::SEVERITY_ERROR], " error(s), ", counts[roced::v1::SEVERITY_WARNING],
                  " warning(s), ", counts[roced::v1::SEVERITY_INFO], " note(s).\n");
  return out;
}

int RunDiagnose(const CommandContext& ctx, const DiagnoseFlags& flags, const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "rocectl: diagnose takes no arguments (got '" << args[0] << "'; use --checks NAMES)\n";
    return 2;
  }
  roced::v1::DiagnoseRequest req;
  for (absl::string_view name : absl::StrSplit(flags.checks, ',', absl::SkipWhitespace())) {
    req.add_checks(std::string(name));
  }
  auto stub = roced::v1::Agent::NewStub(ctx.channel);
  grpc::ClientContext cctx;
  cctx.set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(ctx.timeout));
  roced::v1::DiagnoseResponse resp;
  grpc::Status s = stub->Diagnose(&cctx, req, &resp);
  if (!s.ok()) {
    std::cerr << "rocectl: " << DescribeRpcError(s, ctx) << "\n";
    return s.error_code() == grpc::StatusCode::INVALID_ARGUMENT ? 2 : 1;
  }
  if (ctx.output == Output::kTable) {
    std::cout << DiagnoseText(resp);
  } else {
    std::cout << (ctx.output == Output::kJson ? ToJson(resp) : ToYaml(resp));
  }
  for (const auto& f : resp.findings()) {
    if (f.severity() == roced::v1::SEVERITY_ERROR) return 1;
  }
  return 0;
}

CommandRun BindDiagnose(util::ArgParser* parser) {
  auto flags = std::make_shared<DiagnoseFlags>();
  RegisterDiagnoseFlags(flags.get(), parser);
  return [flags](const CommandContext& ctx, const std::vector<std::string>& args) {
    return RunDiagnose(ctx, *flags, args);
  };
}

}  // namespace roced::ctl

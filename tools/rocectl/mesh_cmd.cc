// rocectl mesh: ListMeshResults from one agent or from every agent of an
// inventory, localized (tools/rocectl/mesh_format).
#include <unistd.h>

#include <atomic>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "mesh/inventory.h"
#include "model/defaults.h"
#include "roced/v1/agent.grpc.pb.h"
#include "tools/rocectl/call.h"
#include "tools/rocectl/commands.h"
#include "tools/rocectl/mesh_format.h"
#include "tools/rocectl/mesh_prometheus.h"
#include "util/fs.h"
#include "util/resolve.h"

namespace roced::ctl {
namespace {

constexpr size_t kMaxInFlight = 32;

struct MeshFlags {
  std::string targets;
  std::string dns;
  std::string baseline_loss;
  std::string prometheus;
  absl::Duration window = model::defaults::kMeshWindow;
};

MeshAnswer Ask(const std::shared_ptr<grpc::Channel>& channel, const CommandContext& ctx, MeshAnswer answer) {
  roced::v1::ListMeshResultsResponse response;
  grpc::Status s = CallAgent(channel, ctx.timeout, &roced::v1::Agent::Stub::ListMeshResults,
                             roced::v1::ListMeshResultsRequest(), &response);
  if (s.ok()) {
    answer.response = std::move(response);
  } else {
    answer.error = DescribeRpcError(s, answer.address);
  }
  return answer;
}

// Every member asked, kMaxInFlight at a time; progress on a terminal.
std::vector<MeshAnswer> AskAll(const CommandContext& ctx, const std::vector<mesh::Member>& members) {
  std::vector<MeshAnswer> answers(members.size());
  std::atomic<size_t> next{0}, done{0};
  std::mutex out_mu;
  const bool progress = isatty(STDERR_FILENO) == 1;
  auto worker = [&] {
    for (size_t i = next++; i < members.size(); i = next++) {
      answers[i] = Ask(ctx.connect(members[i].address), ctx, MeshAnswer{members[i].name, members[i].address, {}, ""});
      const size_t n = ++done;
      if (progress) {
        std::lock_guard<std::mutex> lock(out_mu);
        std::cerr << "\rasked " << n << "/" << members.size() << " agents" << std::flush;
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t i = 0; i < std::min(kMaxInFlight, members.size()); ++i) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
  if (progress) std::cerr << "\r" << std::string(40, ' ') << "\r";
  return answers;
}

// Who was asked and what they answered; `exit` set when that failed.
struct Gathered {
  std::vector<mesh::Member> members;
  std::vector<MeshAnswer> answers;
  std::optional<int> exit;
};

// --prometheus: the agents' series as Prometheus scraped them.
Gathered FromPrometheus(const CommandContext& ctx, const MeshFlags& flags) {
  Gathered g;
  absl::StatusOr<util::HttpUrl> url = util::ParseHttpUrl("--prometheus", flags.prometheus);
  if (!url.ok()) {
    std::cerr << "rocectl: " << url.status().message() << "\n";
    g.exit = kExitUsage;
    return g;
  }
  if (flags.window < kMinPrometheusWindow || flags.window > kMaxPrometheusWindow) {
    std::cerr << "rocectl: --window: " << absl::FormatDuration(flags.window) << " is not in "
              << absl::FormatDuration(kMinPrometheusWindow) << "-" << absl::FormatDuration(kMaxPrometheusWindow)
              << "\n";
    g.exit = kExitUsage;
    return g;
  }
  absl::StatusOr<MeshFromPrometheus> from = QueryPrometheusMesh(*url, flags.window, ctx.timeout);
  if (!from.ok()) {
    std::cerr << "rocectl: --prometheus " << flags.prometheus << ": " << from.status().message() << "\n";
    g.exit = kExitFailed;
    return g;
  }
  if (from->series_unreadable > 0) {
    std::cerr << "rocectl: " << from->series_unreadable << " series left out (bad size/dscp label or value)\n";
  }
  g.members = std::move(from->members);
  g.answers = std::move(from->answers);
  return g;
}

// --dns: every agent the name resolves to; who each is comes from its
// answer.
Gathered FromDns(const CommandContext& ctx, const MeshFlags& flags) {
  Gathered g;
  absl::StatusOr<std::pair<std::string, uint16_t>> dns = util::ParseNamePort("--dns", flags.dns);
  absl::StatusOr<std::vector<std::string>> addresses =
      dns.ok() ? util::ResolveAll(dns->first, dns->second) : absl::StatusOr<std::vector<std::string>>(dns.status());
  if (!addresses.ok() || !ctx.connect) {
    std::cerr << "rocectl: --dns: "
              << (addresses.ok() ? "give --ca, --cert and --key, or --insecure" : addresses.status().message())
              << "\n";
    g.exit = kExitUsage;
    return g;
  }
  std::vector<mesh::Member> targets;
  for (const std::string& a : *addresses) targets.push_back({"", a, "", ""});
  g.answers = AskAll(ctx, targets);
  return g;
}

// --targets: the members an inventory file lists.
Gathered FromTargets(const CommandContext& ctx, const MeshFlags& flags) {
  Gathered g;
  if (!ctx.connect) {
    std::cerr << "rocectl: mesh --targets calls agents over TCP: give --ca, --cert and --key (or "
                 "ROCECTL_CA, ROCECTL_CERT, ROCECTL_KEY), or --insecure\n";
    g.exit = kExitUsage;
    return g;
  }
  absl::StatusOr<std::string> text =
      util::ReadRegularFile(flags.targets, mesh::kMaxInventoryBytes, "targets file");
  absl::StatusOr<std::vector<mesh::Member>> parsed =
      text.ok() ? mesh::ParseInventory(*text) : absl::StatusOr<std::vector<mesh::Member>>(text.status());
  if (!parsed.ok()) {
    std::cerr << "rocectl: --targets " << flags.targets << ": " << parsed.status().message() << "\n";
    g.exit = kExitUsage;
    return g;
  }
  g.members = *std::move(parsed);
  g.answers = AskAll(ctx, g.members);
  return g;
}

Gathered Gather(const CommandContext& ctx, const MeshFlags& flags) {
  if (!flags.prometheus.empty()) return FromPrometheus(ctx, flags);
  if (!flags.dns.empty()) return FromDns(ctx, flags);
  if (!flags.targets.empty()) return FromTargets(ctx, flags);
  Gathered g;
  g.answers.push_back(Ask(ctx.channel, ctx, MeshAnswer{"", ctx.where, {}, ""}));
  return g;
}

int RunMesh(const CommandContext& ctx, const MeshFlags& flags, const std::vector<std::string>& args) {
  if (!NoArguments("mesh", args)) return kExitUsage;
  mesh::LocalizeOptions options;
  if (!flags.baseline_loss.empty() && !absl::SimpleAtod(flags.baseline_loss, &options.baseline_loss)) {
    std::cerr << "rocectl: --baseline-loss: \"" << flags.baseline_loss << "\" is not a number\n";
    return kExitUsage;
  }
  if (absl::Status s = mesh::Validate(options); !s.ok()) {
    std::cerr << "rocectl: --baseline-loss: " << flags.baseline_loss << " is not 0 (none) or in [1e-9, 0.1]\n";
    return kExitUsage;
  }
  if (!flags.targets.empty() + !flags.dns.empty() + !flags.prometheus.empty() > 1) {
    std::cerr << "rocectl: mesh: give one of --targets, --dns and --prometheus\n";
    return kExitUsage;
  }
  const Gathered g = Gather(ctx, flags);
  if (g.exit) return *g.exit;
  absl::StatusOr<roced::v1::MeshReport> report = BuildMeshReport(g.members, g.answers, options);
  if (!report.ok()) {
    std::cerr << "rocectl: --baseline-loss: " << report.status().message() << "\n";
    return kExitUsage;
  }
  // From Prometheus the per-agent series are the report's input, not
  // something an agent said: a fleet's worth is left out of -o json.
  if (!flags.prometheus.empty() && g.answers.size() > 1) report->clear_results();
  if (ctx.output == Output::kTable) {
    std::cout << MeshTable(*report);
  } else {
    std::cout << (ctx.output == Output::kJson ? ToJson(*report) : ToYaml(*report));
  }
  if (report->agents_answered() == 0) {
    std::cerr << "rocectl: no agent answered: " << (g.answers.empty() ? "" : g.answers[0].error) << "\n";
    return kExitFailed;
  }
  // Suspects, or no probe to judge by: either is for the caller to look at.
  return report->suspects().empty() && report->sent() > 0 ? kExitOk : kExitFindings;
}

}  // namespace

CommandRun BindMesh(util::ArgParser* parser) {
  auto flags = std::make_shared<MeshFlags>();
  parser->AddString("targets", &flags->targets, "FILE",
                    "mesh: ask every agent of this inventory (NAME ADDRESS [TOR [POD]] a line). A "
                    "member without a ToR takes the one its agent reports. Instead of the --target agent alone.");
  parser->AddString("dns", &flags->dns, "NAME:PORT",
                    "mesh: ask every agent a DNS name resolves to (e.g. a Kubernetes headless Service "
                    "over the DaemonSet); the membership is the agents and the peers they list.");
  parser->AddString("prometheus", &flags->prometheus, "URL",
                    "mesh: read the windows from the Prometheus server at URL. It is "
                    "http://HOST:PORT[/PREFIX] and scrapes the agents, instead of asking each agent: "
                    "for fleets too large to ask; across ToRs its series know the far ToR, not the "
                    "far host.");
  parser->AddDuration("window", &flags->window, "DURATION",
                      "mesh --prometheus: the window the counts are taken over (10s to 24h).");
  parser->AddString("baseline-loss", &flags->baseline_loss, "P",
                    "mesh: an optional floor under each scope's reference loss rate: default none; "
                    "1e-9 to 0.1.");
  return [flags](const CommandContext& ctx, const std::vector<std::string>& args) {
    return RunMesh(ctx, *flags, args);
  };
}

}  // namespace roced::ctl

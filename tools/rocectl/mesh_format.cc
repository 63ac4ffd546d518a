#include "tools/rocectl/mesh_format.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "util/proto_time.h"

namespace roced::ctl {
namespace {

// The membership: the inventory with the agents' own ToR and pod where it
// has none, or the agents and the peers they list.
std::vector<mesh::Member> Membership(std::vector<mesh::Member> members, const std::vector<MeshAnswer>& answers) {
  std::map<std::string, const roced::v1::ListMeshResultsResponse*> by_name;
  for (const MeshAnswer& a : answers) {
    if (a.response.has_value()) by_name.emplace(a.response->node_name(), &*a.response);
  }
  if (!members.empty()) {
    // What the agents that answered know of their peers: a member without
    // a ToR whose own agent is silent (a dead host) still stands under it.
    std::map<std::string, const roced::v1::MeshPeer*> peers;
    for (const MeshAnswer& a : answers) {
      if (!a.response.has_value()) continue;
      for (const roced::v1::MeshPeer& p : a.response->peers()) peers.emplace(p.name(), &p);
    }
    for (mesh::Member& m : members) {
      auto it = by_name.find(m.name);
      auto peer = peers.find(m.name);
      if (m.tor.empty()) m.tor = it != by_name.end() ? it->second->tor() : peer != peers.end() ? peer->second->tor() : "";
      if (m.pod.empty()) m.pod = it != by_name.end() ? it->second->pod() : peer != peers.end() ? peer->second->pod() : "";
    }
    return members;
  }
  std::set<std::string> seen;
  for (const MeshAnswer& a : answers) {
    if (!a.response.has_value()) continue;
    const auto& r = *a.response;
    if (seen.insert(r.node_name()).second) members.push_back({r.node_name(), a.address, r.tor(), r.pod()});
    for (const roced::v1::MeshPeer& p : r.peers()) {
      if (seen.insert(p.name()).second) members.push_back({p.name(), p.address(), p.tor(), p.pod()});
    }
  }
  return members;
}

// Names and reasons come from agents and Prometheus labels: control
// characters are shown escaped, not sent to the terminal.
std::string Printable(const std::string& text) {
  std::string out;
  for (char ch : text) {
    const auto b = static_cast<unsigned char>(ch);
    if (b < 0x20 || b == 0x7f) {
      absl::StrAppend(&out, absl::StrFormat("\\x%02x", b));
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

// A peer whose answers its probers saw held this long (p99) is marked: a
// starved responder holds for seconds; a slow emulated lab guest, 100 ms.
constexpr absl::Duration kHeldLong = absl::Milliseconds(500);

// The hosts whose findings are of kind "host": those whose agent says they
// are busy, then the peers whose answers a prober saw held long (a host's
// first mark stays). A name that is not a member, or a ToR's stand-in, is
// not marked.
void MarkHosts(const std::vector<MeshAnswer>& answers, mesh::Observations* obs) {
  for (const MeshAnswer& a : answers) {
    if (!a.response.has_value() || a.response->host_busy().empty()) continue;
    obs->MarkHost(a.response->node_name(), a.response->host_busy()).IgnoreError();
  }
  for (const MeshAnswer& a : answers) {
    if (!a.response.has_value()) continue;
    for (const roced::v1::MeshSeries& s : a.response->series()) {
      if (!s.has_responder_hold_p99()) continue;
      const absl::Duration held = util::FromProto(s.responder_hold_p99());
      if (held <= kHeldLong) continue;
      obs->MarkHost(s.peer(), absl::StrFormat("answers held p99 %.0f ms, seen by %s", absl::ToDoubleMilliseconds(held),
                                              a.response->node_name()))
          .IgnoreError();
    }
  }
}

void AddSuspects(const mesh::Localization& loc, roced::v1::MeshReport* report) {
  for (const mesh::Suspect& s : loc.suspects) {
    roced::v1::MeshSuspect* out = report->add_suspects();
    out->set_kind(mesh::SuspectKindName(s.kind));
    out->set_component(s.component);
    if (s.size_bytes.has_value()) out->set_size_bytes(*s.size_bytes);
    if (s.dscp.has_value()) out->set_dscp(*s.dscp);
    out->set_sent(s.sent);
    out->set_lost(s.lost);
    out->set_loss_ratio(s.loss_ratio);
    out->set_llr(s.llr);
    out->set_confidence(s.confidence);
    out->set_parts_lossy(s.parts_lossy);
    out->set_parts_total(s.parts_total);
    out->set_evidence(s.evidence);
    out->set_symptom(mesh::SymptomName(s.symptom));
    out->set_reference(s.reference);
    out->set_host_reason(s.host_reason);
  }
}

void AddAgents(const std::vector<MeshAnswer>& answers, roced::v1::MeshReport* report) {
  for (const MeshAnswer& a : answers) {
    roced::v1::MeshAgentAnswer* out = report->add_agents();
    out->set_address(a.address);
    out->set_name(a.name);
    out->set_answered(a.response.has_value());
    out->set_error(a.error);
    if (!a.response.has_value()) continue;
    if (a.name.empty()) out->set_name(a.response->node_name());
    out->set_tor(a.response->tor());
    out->set_pod(a.response->pod());
    out->set_problem(a.response->problem());
    *report->add_results() = *a.response;
  }
  report->set_agents_asked(static_cast<uint32_t>(answers.size()));
  report->set_agents_answered(
      static_cast<uint32_t>(std::count_if(answers.begin(), answers.end(), [](auto& a) { return a.response.has_value(); })));
}

}  // namespace

absl::StatusOr<roced::v1::MeshReport> BuildMeshReport(std::vector<mesh::Member> members,
                                                      const std::vector<MeshAnswer>& answers,
                                                      const mesh::LocalizeOptions& options) {
  if (absl::Status s = mesh::Validate(options); !s.ok()) return s;
  roced::v1::MeshReport report;
  report.set_baseline_loss(options.baseline_loss);
  AddAgents(answers, &report);
  mesh::Observations obs(Membership(std::move(members), answers));
  MarkHosts(answers, &obs);
  std::map<std::pair<uint32_t, uint32_t>, int64_t> worst_p99;  // by (from ToR, to ToR) index
  uint32_t skipped = 0;
  for (const MeshAnswer& a : answers) {
    if (!a.response.has_value()) continue;
    const std::string& prober = a.response->node_name();
    for (const roced::v1::MeshSeries& s : a.response->series()) {
      const mesh::PathWindow w{.prober = prober,
                               .target = s.peer(),
                               .size_bytes = s.size_bytes(),
                               .dscp = s.dscp(),
                               .sent = s.sent(),
                               .lost = s.lost(),
                               .slow = s.slow(),
                               .hist_sent = s.hist_sent(),
                               .hist_lost = s.hist_lost(),
                               .hist_slow = s.hist_slow()};
      if (!obs.Add(w).ok()) {
        ++skipped;
        continue;
      }
      if (!s.has_rtt_p99()) continue;
      const auto key = std::make_pair(obs.tor_of(*obs.index_of(prober)), obs.tor_of(*obs.index_of(s.peer())));
      worst_p99[key] = std::max(worst_p99[key], absl::ToInt64Nanoseconds(util::FromProto(s.rtt_p99())));
    }
  }
  report.set_series_skipped(skipped);
  absl::StatusOr<mesh::Localization> loc = mesh::Localize(obs, options);
  if (!loc.ok()) return loc.status();
  report.set_sent(loc->sent);
  report.set_lost(loc->lost);
  report.set_slow(loc->slow);
  AddSuspects(*loc, &report);
  for (const mesh::TorCell& c : mesh::TorMatrix(obs)) {
    roced::v1::MeshMatrixCell* cell = report.add_matrix();
    cell->set_from_tor(obs.tors()[c.from]);
    cell->set_to_tor(obs.tors()[c.to]);
    cell->set_sent(c.sent);
    cell->set_lost(c.lost);
    cell->set_loss_ratio(c.sent == 0 ? 0 : static_cast<double>(c.lost) / static_cast<double>(c.sent));
    auto it = worst_p99.find({c.from, c.to});
    if (it != worst_p99.end()) *cell->mutable_worst_p99() = util::ToProto(absl::Nanoseconds(it->second));
  }
  return report;
}

namespace {

std::string Percent(uint64_t lost, uint64_t sent) {
  return sent == 0 ? "-" : absl::StrFormat("%.2f%%", 100.0 * static_cast<double>(lost) / static_cast<double>(sent));
}

// A round trip in the unit that reads: microseconds below 1 ms (RoCE
// under one ToR), milliseconds above.
std::string Millis(const google::protobuf::Duration& d) {
  const absl::Duration t = util::FromProto(d);
  if (t < absl::Milliseconds(1)) return absl::StrFormat("%.1fus", absl::ToDoubleMicroseconds(t));
  return absl::StrFormat("%.2fms", absl::ToDoubleMilliseconds(t));
}

// Beyond this many ToRs the matrix would not fit a terminal: the worst
// cells are listed instead.
constexpr size_t kMaxMatrixTors = 10;
constexpr int kWorstCells = 20;

std::string CellText(const roced::v1::MeshMatrixCell& c) {
  std::string text = absl::StrCat(Percent(c.lost(), c.sent()), " of ", c.sent());
  if (c.has_worst_p99()) absl::StrAppend(&text, " p99 ", Millis(c.worst_p99()));
  return text;
}

std::string WorstCells(const roced::v1::MeshReport& r) {
  std::vector<const roced::v1::MeshMatrixCell*> cells;
  for (const auto& c : r.matrix()) cells.push_back(&c);
  std::sort(cells.begin(), cells.end(), [](auto* a, auto* b) { return a->loss_ratio() > b->loss_ratio(); });
  std::string out = absl::StrCat("Worst ToR pairs by loss (of ", cells.size(), "):\n");
  for (int i = 0; i < kWorstCells && i < static_cast<int>(cells.size()); ++i) {
    absl::StrAppend(&out, absl::StrFormat("  %-20s -> %-20s  %s\n", cells[i]->from_tor(), cells[i]->to_tor(),
                                          CellText(*cells[i])));
  }
  return out;
}

std::string MatrixTable(const roced::v1::MeshReport& r) {
  std::set<std::string> tors;
  std::map<std::pair<std::string, std::string>, const roced::v1::MeshMatrixCell*> cells;
  for (const auto& c : r.matrix()) {
    tors.insert(c.from_tor());
    tors.insert(c.to_tor());
    cells[{c.from_tor(), c.to_tor()}] = &c;
  }
  if (tors.size() > kMaxMatrixTors) return WorstCells(r);
  std::string out = absl::StrFormat("%-16s", "FROM \\ TO");
  for (const std::string& t : tors) absl::StrAppend(&out, absl::StrFormat("  %-26s", t));
  absl::StrAppend(&out, "\n");
  for (const std::string& from : tors) {
    absl::StrAppend(&out, absl::StrFormat("%-16s", from));
    for (const std::string& to : tors) {
      auto it = cells.find({from, to});
      absl::StrAppend(&out, absl::StrFormat("  %-26s", it == cells.end() ? "-" : CellText(*it->second)));
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

std::string SuspectsText(const roced::v1::MeshReport& r) {
  // "No suspects" only from probes: without any, nothing was looked at.
  if (r.agents_answered() == 0) return "No data: no agent answered, so there is nothing to judge.\n";
  if (r.sent() == 0) return "No data: the agents that answered have sent no mesh probes yet.\n";
  if (r.suspects().empty()) {
    return absl::StrCat("No suspects: every scope is in line with its peers and its history",
                        r.baseline_loss() > 0 ? absl::StrFormat(" (floor %g)", r.baseline_loss()) : "", ".\n");
  }
  std::string out = "Suspects (most significant first):\n";
  int n = 0;
  for (const roced::v1::MeshSuspect& s : r.suspects()) {
    std::string what = absl::StrCat(s.kind(), s.component().empty() ? "" : " " + Printable(s.component()));
    if (s.has_size_bytes()) absl::StrAppend(&what, ", probes of ", s.size_bytes(), " B");
    if (s.has_dscp()) absl::StrAppend(&what, ", DSCP ", s.dscp());
    // A latency suspect counts the probes answered, and those answered late.
    const std::string counts =
        s.symptom() == "latency"
            ? absl::StrFormat("slow %d/%d answered (%s)", s.lost(), s.sent(), Percent(s.lost(), s.sent()))
            : absl::StrFormat("lost %d/%d (%s)", s.lost(), s.sent(), Percent(s.lost(), s.sent()));
    absl::StrAppend(&out, absl::StrFormat("  %d. %-40s %s, reference %.2g%%, confidence %.2f\n", ++n, what, counts,
                                          100 * s.reference(), s.confidence()));
    if (!s.host_reason().empty()) absl::StrAppend(&out, "     host: ", Printable(s.host_reason()), "\n");
    if (!s.evidence().empty()) absl::StrAppend(&out, "     ", Printable(s.evidence()), "\n");
  }
  return out;
}

std::string SeriesTable(const roced::v1::ListMeshResultsResponse& r) {
  std::string out = absl::StrFormat("%-20s %-12s %6s %4s %8s %6s %8s %6s %9s %9s  %s\n", "PEER", "TOR", "SIZE",
                                    "DSCP", "SENT", "LOST", "LOSS", "SLOW", "P50", "P99", "LOST SOURCE PORTS");
  for (const roced::v1::MeshSeries& s : r.series()) {
    absl::StrAppend(&out, absl::StrFormat("%-20s %-12s %6d %4d %8d %6d %8s %6d %9s %9s  %s\n", s.peer(), s.peer_tor(),
                                          s.size_bytes(), s.dscp(), s.sent(), s.lost(), Percent(s.lost(), s.sent()),
                                          s.slow(), s.has_rtt_p50() ? Millis(s.rtt_p50()) : "-",
                                          s.has_rtt_p99() ? Millis(s.rtt_p99()) : "-",
                                          absl::StrJoin(s.lost_source_ports(), " ")));
  }
  for (const roced::v1::MeshPeer& p : r.peers()) {
    if (!p.reachable()) absl::StrAppend(&out, "not probed: ", p.name(), " (", p.address(), "): ", p.error(), "\n");
  }
  return out;
}

}  // namespace

std::string MeshTable(const roced::v1::MeshReport& r) {
  std::string out = absl::StrCat("Mesh: ", r.agents_answered(), " of ", r.agents_asked(), " agent(s) answered");
  if (!r.results().empty()) {
    const auto& first = r.results(0);
    absl::StrAppend(&out, "; window ", absl::FormatDuration(util::FromProto(first.window())), ", clock ",
                    first.clock());
  }
  absl::StrAppend(&out, "; ", r.sent(), " probes, ", r.lost(), " lost (", Percent(r.lost(), r.sent()), ")",
                  r.slow() > 0 ? absl::StrCat(", ", r.slow(), " slow") : "", "\n");
  for (const roced::v1::MeshAgentAnswer& a : r.agents()) {
    if (!a.answered()) absl::StrAppend(&out, "no answer: ", a.name(), " (", a.address(), "): ", a.error(), "\n");
    if (!a.problem().empty()) absl::StrAppend(&out, "problem: ", a.name(), ": ", a.problem(), "\n");
  }
  if (r.series_skipped() > 0) {
    absl::StrAppend(&out, r.series_skipped(),
                    " series skipped: prober or peer not in the membership, or counts that do not add up\n");
  }
  absl::StrAppend(&out, "\n", MatrixTable(r), "\n", SuspectsText(r));
  if (r.agents_asked() == 1 && r.results_size() == 1) absl::StrAppend(&out, "\n", SeriesTable(r.results(0)));
  return out;
}

}  // namespace roced::ctl

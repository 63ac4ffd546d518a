#include "tools/rocectl/mesh_prometheus.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "mesh/localize.h"
#include "util/proto_time.h"

namespace roced::ctl {
namespace {

using roced::v1::PrometheusQueryResponse;
using roced::v1::PrometheusSample;

std::string Label(const PrometheusSample& s, const std::string& name) {
  auto it = s.metric().find(name);
  return it == s.metric().end() ? "" : it->second;
}

// The sample's value, when it is a finite number.
std::optional<double> Value(const PrometheusSample& s) {
  if (s.value().values_size() != 2 || !s.value().values(1).has_string_value()) return std::nullopt;
  double v = 0;
  if (!absl::SimpleAtod(s.value().values(1).string_value(), &v) || !std::isfinite(v)) return std::nullopt;
  return v;
}

absl::Status CheckVector(const std::string& what, const PrometheusQueryResponse& r) {
  if (r.status() != "success") {
    return absl::InvalidArgumentError(absl::StrCat(what, ": status \"", r.status(), "\": ", r.error()));
  }
  if (r.data().result_type() != "vector") {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": resultType \"", r.data().result_type(), "\", not an instant vector"));
  }
  return absl::OkStatus();
}

// (instance, peer_tor, peer, size, dscp)
using SeriesKey = std::tuple<std::string, std::string, std::string, uint32_t, uint32_t>;

struct Agent {
  std::string node, tor, pod;
};

}  // namespace

PrometheusMeshQueries MeshQueries(absl::Duration window) {
  const std::string w = absl::StrCat("[", absl::ToInt64Seconds(window), "s]");
  PrometheusMeshQueries q;
  q.info = "max by (instance, node, tor, pod) (roced_mesh_info)";
  q.sent = absl::StrCat("sum by (instance, tor, peer_tor, peer, size, dscp) (increase(roced_mesh_probes_sent_total", w,
                        "))");
  q.lost = absl::StrCat("sum by (instance, tor, peer_tor, peer, size, dscp) (increase(roced_mesh_probes_lost_total", w,
                        "))");
  q.p99 = absl::StrCat(
      "histogram_quantile(0.99, sum by (instance, peer_tor, peer, le) (rate(roced_mesh_rtt_seconds_bucket", w, ")))");
  // Busy now: a restart hours into a long --window is no reason to read
  // the host's every probe as the host's.
  q.busy = "max by (instance) (roced_mesh_host_busy)";
  return q;
}

namespace {

// A count from Prometheus's extrapolated increase(): rounded, at least 0,
// at most 1e15.
uint64_t Count(double v) { return v <= 0 ? 0 : static_cast<uint64_t>(std::llround(std::min(v, 1e15))); }

std::optional<SeriesKey> KeyOf(const PrometheusSample& s) {
  uint32_t size = 0, dscp = 0;
  if (!absl::SimpleAtoi(Label(s, "size"), &size) || !absl::SimpleAtoi(Label(s, "dscp"), &dscp) || dscp > 63) {
    return std::nullopt;
  }
  return SeriesKey{Label(s, "instance"), Label(s, "peer_tor"), Label(s, "peer"), size, dscp};
}

// What the five answers hold, indexed.
struct Indexed {
  std::map<std::string, Agent> agents;  // by instance
  std::map<SeriesKey, double> lost;
  std::map<std::tuple<std::string, std::string, std::string>, double> p99;  // (instance, peer_tor, peer)
  std::set<std::string> busy;  // instances whose host was busy in the window
};

Indexed Index(const PrometheusQueryResponse& info, const PrometheusQueryResponse& lost,
              const PrometheusQueryResponse& p99, const PrometheusQueryResponse& busy) {
  Indexed x;
  for (const PrometheusSample& s : busy.data().result()) {
    std::optional<double> v = Value(s);
    if (v.has_value() && *v > 0) x.busy.insert(Label(s, "instance"));
  }
  for (const PrometheusSample& s : info.data().result()) {
    const std::string node = Label(s, "node");
    if (!node.empty()) x.agents[Label(s, "instance")] = {node, Label(s, "tor"), Label(s, "pod")};
  }
  for (const PrometheusSample& s : lost.data().result()) {
    std::optional<SeriesKey> k = KeyOf(s);
    std::optional<double> v = Value(s);
    if (k.has_value() && v.has_value()) x.lost[*k] = *v;
  }
  for (const PrometheusSample& s : p99.data().result()) {
    std::optional<double> v = Value(s);
    if (v.has_value()) x.p99[{Label(s, "instance"), Label(s, "peer_tor"), Label(s, "peer")}] = *v;
  }
  return x;
}

// The series of the sent answer, per instance, with what they name.
struct Series {
  std::map<std::string, roced::v1::ListMeshResultsResponse> by_instance;
  std::set<std::string> no_info;                    // instances without roced_mesh_info
  std::map<std::string, std::string> far_tors;      // ToR -> a pod seen under it
  std::map<std::string, mesh::Member> named_mates;  // peers named under a prober's ToR
  uint32_t unreadable = 0;
};

Series ReadSeries(const PrometheusQueryResponse& sent, const Indexed& x) {
  Series out;
  for (const PrometheusSample& s : sent.data().result()) {
    std::optional<SeriesKey> k = KeyOf(s);
    std::optional<double> v = Value(s);
    if (!k.has_value() || !v.has_value()) {
      ++out.unreadable;
      continue;
    }
    const auto& [instance, peer_tor, peer, size, dscp] = *k;
    auto agent = x.agents.find(instance);
    if (agent == x.agents.end()) {
      out.no_info.insert(instance);
      continue;
    }
    roced::v1::MeshSeries* series = out.by_instance[instance].add_series();
    const uint64_t n = Count(*v);
    auto l = x.lost.find(*k);
    const uint64_t nl = l == x.lost.end() ? 0 : std::min(n, Count(l->second));
    series->set_peer(peer.empty() ? mesh::TorStandIn(peer_tor, "").name : peer);
    series->set_peer_tor(peer_tor);
    series->set_size_bytes(size);
    series->set_dscp(dscp);
    series->set_sent(n);
    series->set_lost(nl);
    series->set_loss_ratio(n == 0 ? 0 : static_cast<double>(nl) / static_cast<double>(n));
    auto q = x.p99.find({instance, peer_tor, peer});
    if (q != x.p99.end()) *series->mutable_rtt_p99() = util::ToProto(absl::Seconds(q->second));
    if (peer.empty()) {
      out.far_tors.emplace(peer_tor, "");
    } else {
      out.named_mates.emplace(peer, mesh::Member{peer, "", agent->second.tor, agent->second.pod});
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<MeshFromPrometheus> MeshFromPrometheusAnswers(const PrometheusQueryResponse& info,
                                                            const PrometheusQueryResponse& sent,
                                                            const PrometheusQueryResponse& lost,
                                                            const PrometheusQueryResponse& p99,
                                                            const PrometheusQueryResponse& busy,
                                                            absl::Duration window) {
  for (const auto& [what, r] : {std::pair<const char*, const PrometheusQueryResponse*>{"roced_mesh_info", &info},
                                {"probes sent", &sent},
                                {"probes lost", &lost},
                                {"round-trip p99", &p99},
                                {"host busy", &busy}}) {
    if (absl::Status s = CheckVector(what, *r); !s.ok()) return s;
  }
  const Indexed x = Index(info, lost, p99, busy);
  Series series = ReadSeries(sent, x);
  MeshFromPrometheus out;
  out.series_unreadable = series.unreadable;
  std::set<std::string> members;
  for (const auto& [instance, a] : x.agents) {
    if (members.insert(a.node).second) out.members.push_back({a.node, instance, a.tor, a.pod});
    if (!a.tor.empty()) series.far_tors[a.tor] = a.pod;
  }
  for (const auto& [name, m] : series.named_mates) {
    if (members.insert(name).second) out.members.push_back(m);  // a mate without metrics: a dead agent
  }
  for (const auto& [tor, pod] : series.far_tors) out.members.push_back(mesh::TorStandIn(tor, pod));
  for (const auto& [instance, a] : x.agents) {
    MeshAnswer answer{a.node, instance, series.by_instance[instance], ""};
    answer.response->set_node_name(a.node);
    answer.response->set_tor(a.tor);
    answer.response->set_pod(a.pod);
    *answer.response->mutable_window() = util::ToProto(window);
    if (x.busy.contains(instance)) {
      answer.response->set_host_busy(absl::StrCat("roced_mesh_host_busy was 1 within the last ",
                                                  absl::FormatDuration(window), " (ListMeshResults says why)"));
    }
    out.answers.push_back(std::move(answer));
  }
  for (const std::string& instance : series.no_info) {
    out.answers.push_back(MeshAnswer{"", instance, std::nullopt,
                                     "mesh series without roced_mesh_info (an agent older than this rocectl?)"});
  }
  return out;
}

absl::StatusOr<PrometheusQueryResponse> ParsePrometheusAnswer(const std::string& what, int http_status,
                                                              const std::string& body) {
  PrometheusQueryResponse r;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const bool parsed = google::protobuf::util::JsonStringToMessage(body, &r, options).ok();
  if (parsed && r.status() == "error") {
    return absl::InvalidArgumentError(absl::StrCat(what, ": Prometheus says ", r.error_type(), ": ", r.error()));
  }
  if (http_status != 200) {
    return absl::UnavailableError(
        absl::StrCat(what, ": HTTP ", http_status, parsed ? "" : absl::StrCat(": ", body.substr(0, 200))));
  }
  if (!parsed) return absl::DataLossError(absl::StrCat(what, ": the answer is not a Prometheus API answer"));
  return r;
}

absl::StatusOr<MeshFromPrometheus> QueryPrometheusMesh(const util::HttpUrl& url, absl::Duration window,
                                                       absl::Duration timeout) {
  const PrometheusMeshQueries q = MeshQueries(window);
  PrometheusQueryResponse answers[5];
  const std::string* queries[5] = {&q.info, &q.sent, &q.lost, &q.p99, &q.busy};
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<util::HttpResponse> got =
        util::HttpGet(url, "/api/v1/query?query=" + util::UrlEncode(*queries[i]), timeout, kMaxPrometheusAnswerBytes);
    if (!got.ok()) return got.status();
    absl::StatusOr<PrometheusQueryResponse> parsed = ParsePrometheusAnswer(*queries[i], got->status, got->body);
    if (!parsed.ok()) return parsed.status();
    answers[i] = *std::move(parsed);
  }
  return MeshFromPrometheusAnswers(answers[0], answers[1], answers[2], answers[3], answers[4], window);
}

}  // namespace roced::ctl

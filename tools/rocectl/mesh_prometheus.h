// rocectl mesh --prometheus: the mesh's windows from a Prometheus server
// that scrapes the agents, for fleets too large to ask every agent. The
// same localization (lib/mesh/localize) runs over them; what differs is
// what the series keep: across ToRs the agents label a probe with the
// peer's ToR only (bounded cardinality), so each far ToR is one member
// that stands for its hosts (mesh::TorStandIn). Under a ToR the peer is
// named, as in the agents' own answers.
//
// Five instant queries over the window W (increase() of the counters,
// so the counts are Prometheus's extrapolation, rounded):
//   max by (instance, node, tor, pod) (roced_mesh_info)
//   sum by (instance, tor, peer_tor, peer, size, dscp) (increase(roced_mesh_probes_sent_total[W]))
//   the same for roced_mesh_probes_lost_total
//   histogram_quantile(0.99, sum by (instance, peer_tor, peer, le) (rate(roced_mesh_rtt_seconds_bucket[W])))
//   max by (instance) (roced_mesh_host_busy)
// roced_mesh_info names the prober behind each scrape target (instance);
// an agent whose roced_mesh_host_busy is 1 now answers as busy (host_busy),
// so that its host is marked (not one busy at any time in a long window:
// a restart hours ago says nothing of its probes now). The series keep no history nor
// slow counts: the scopes are judged against their peers only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "mesh/pinglist.h"
#include "roced/v1/prometheus_api.pb.h"
#include "tools/rocectl/mesh_format.h"
#include "util/http_get.h"

namespace roced::ctl {

// The window's allowed range (a rate needs two scrapes in it).
inline constexpr absl::Duration kMinPrometheusWindow = absl::Seconds(10);
inline constexpr absl::Duration kMaxPrometheusWindow = absl::Hours(24);
// An answer larger than this is refused (about 200k series).
inline constexpr size_t kMaxPrometheusAnswerBytes = size_t{64} << 20;

struct PrometheusMeshQueries {
  std::string info, sent, lost, p99, busy;
};
PrometheusMeshQueries MeshQueries(absl::Duration window);

// What the series give: the members (every agent with roced_mesh_info,
// ToR mates named by others' series, one stand-in per far ToR) and one
// answer per agent, as BuildMeshReport takes them.
struct MeshFromPrometheus {
  std::vector<mesh::Member> members;
  std::vector<MeshAnswer> answers;
  // Series left out: a bad size or dscp label, a value that is not a
  // finite number.
  uint32_t series_unreadable = 0;
};

// Pure: the five answers (already parsed) in. INVALID_ARGUMENT when one
// of them is not a successful instant vector, naming which.
absl::StatusOr<MeshFromPrometheus> MeshFromPrometheusAnswers(const roced::v1::PrometheusQueryResponse& info,
                                                            const roced::v1::PrometheusQueryResponse& sent,
                                                            const roced::v1::PrometheusQueryResponse& lost,
                                                            const roced::v1::PrometheusQueryResponse& p99,
                                                            const roced::v1::PrometheusQueryResponse& busy,
                                                            absl::Duration window);

// A /api/v1/query answer's body parsed, or why not (the server's own
// error when it says status "error").
absl::StatusOr<roced::v1::PrometheusQueryResponse> ParsePrometheusAnswer(const std::string& what, int http_status,
                                                                         const std::string& body);

// The five queries sent to `url` within `timeout` each, converted.
absl::StatusOr<MeshFromPrometheus> QueryPrometheusMesh(const util::HttpUrl& url, absl::Duration window,
                                                       absl::Duration timeout);

}  // namespace roced::ctl

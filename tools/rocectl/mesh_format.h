// rocectl mesh's pure part: the agents' ListMeshResults answers and the
// membership in, a roced.v1.MeshReport out (the windows localized with
// lib/mesh, the ToR-by-ToR matrix), and the report as a table. No RPCs
// here (mesh_cmd.cc asks the agents), so tests build reports without one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "mesh/localize.h"
#include "mesh/pinglist.h"
#include "roced/v1/agent.pb.h"
#include "roced/v1/mesh_report.pb.h"

namespace roced::ctl {

// One agent asked: its answer, or why there is none.
struct MeshAnswer {
  std::string name;     // the inventory's NAME; empty for the --target agent
  std::string address;  // where it was asked
  std::optional<roced::v1::ListMeshResultsResponse> response;
  std::string error;  // DescribeRpcError's line, when there is no response
};

// The answers localized over `members` (the inventory; empty: the agents
// that answered and the peers they list), each series with its slow and
// history counts. A host whose agent says it is busy (host_busy), or whose
// answers a prober saw held over 500 ms (responder_hold_p99), is marked
// (mesh::Observations::MarkHost): a finding on it is of kind "host".
// INVALID_ARGUMENT for options mesh::Validate refuses.
absl::StatusOr<roced::v1::MeshReport> BuildMeshReport(std::vector<mesh::Member> members,
                                                      const std::vector<MeshAnswer>& answers,
                                                      const mesh::LocalizeOptions& options);

// The report for people: the header line, the agents that did not answer,
// the ToR-by-ToR matrix, the suspects, and for one agent its series.
std::string MeshTable(const roced::v1::MeshReport& report);

}  // namespace roced::ctl

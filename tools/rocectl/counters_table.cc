// CountersTable, apart from RunCounters so that tests can link it without
// the gRPC client side of rocectl.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/rocectl/counters_cmd.h"

namespace roced::ctl {

namespace {

// The driver's name when it differs from the stable one, so on-call can
// match what `ethtool -S` or sysfs shows.
std::string CounterLabel(const roced::v1::Counter& c) {
  if (c.source_name().empty() || c.source_name() == c.name()) return c.name();
  return absl::StrCat(c.name(), " (", c.source_name(), ")");
}

std::string Number(double v) {
  if (v == 0) return "0";
  if (v >= 100 || v == static_cast<double>(static_cast<int64_t>(v))) {
    return absl::StrFormat("%.0f", v);
  }
  return absl::StrFormat("%.2f", v);
}

}  // namespace

std::string CountersTable(const roced::v1::GetCountersResponse& response, bool with_rates,
                          bool moving_only) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"DEVICE", "PORT", "NETDEV", "SOURCE", "COUNTER", "PRIO", "VALUE"});
  if (with_rates) rows.front().push_back("RATE/s");
  for (const auto& set : response.sets()) {
    for (const auto& c : set.counters()) {
      if (moving_only && (!c.has_rate() || c.rate() == 0)) continue;
      std::vector<std::string> row = {set.device().empty() ? "-" : set.device(),
                                      set.device().empty() ? "-" : absl::StrCat(set.port()),
                                      set.netdev().empty() ? "-" : set.netdev(),
                                      set.source(),
                                      CounterLabel(c),
                                      c.has_priority() ? absl::StrCat(c.priority()) : "-",
                                      absl::StrCat(c.value())};
      if (with_rates) row.push_back(c.has_rate() ? Number(c.rate()) : "-");
      rows.push_back(std::move(row));
    }
  }
  if (rows.size() == 1) {
    return moving_only ? "No counter moved.\n" : "No counters.\n";
  }
  std::vector<size_t> width(rows.front().size(), 0);
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      // Numbers right-aligned, text left-aligned.
      const bool numeric = i >= 6;
      std::string cell = numeric ? std::string(width[i] - r[i].size(), ' ') + r[i]
                                 : r[i] + std::string(width[i] - r[i].size(), ' ');
      absl::StrAppend(&line, i == 0 ? "" : "  ", cell);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

}  // namespace roced::ctl

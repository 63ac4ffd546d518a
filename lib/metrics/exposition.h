// The Prometheus text exposition format (version 0.0.4) for the scrape
// path: families appended to one growing std::string, numbers formatted
// with std::to_chars (shortest round-trip form), no streams, no locale.
// It writes what prometheus::TextSerializer (1.0.1, Debian 12's) writes for
// the same families (HELP and TYPE lines, label escaping, the
// _bucket/_sum/_count series of histograms and summaries, le="+Inf",
// timestamps when set), with differences of form only: NaN spelled "NaN"
// (TextSerializer: "Nan"), backslashes and newlines in HELP text escaped as
// the format asks (TextSerializer writes them raw), a newline in a label
// value as \n (TextSerializer: a backslash and the newline itself, which
// breaks the line), and a histogram's or summary's series in the order
// buckets or quantiles, _sum, _count. The unit test checks the two agree
// sample for sample.
//
// A scrape of 2,000 RDMA series spends most of its time here and in the
// compression after it (bench/scrape_vs_node_exporter.sh), so the writer
// reserves once and appends in place.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "prometheus/metric_family.h"

namespace roced::metrics {

// Appends one family: its HELP and TYPE lines, then every series.
void AppendFamily(const prometheus::MetricFamily& family, std::string* out);

// A family's HELP line (none when `help` is empty) and TYPE line: what
// AppendFamily writes before the series, for writers that append the
// series themselves.
void AppendFamilyHeader(std::string_view name, std::string_view help,
                        prometheus::MetricType type, std::string* out);

// All families, in order.
std::string Expose(const std::vector<prometheus::MetricFamily>& families);

// A sample value as the format spells it: "NaN", "+Inf", "-Inf", else the
// shortest decimal that reads back as the same double, in plain notation
// for magnitudes from 1e-4 to below 1e16 (0.0005, 1234.5) and scientific
// outside it (1e-05, 1e+20), as %g chooses.
void AppendValue(double value, std::string* out);

// A label value with backslash, double quote and newline escaped.
void AppendEscapedLabelValue(std::string_view value, std::string* out);

// A collector that can write its families as exposition text directly:
// the scrape path asks it for text instead of families (no ClientMetric,
// no label strings per series). What it writes must be what
// Expose(Collect()) would.
class TextCollectable {
 public:
  virtual ~TextCollectable() = default;
  virtual void AppendText(std::string* out) const = 0;
};

// The Content-Type of what Expose() writes.
inline constexpr char kTextContentType[] = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace roced::metrics

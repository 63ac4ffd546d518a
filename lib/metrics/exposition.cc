#include "metrics/exposition.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

namespace roced::metrics {
namespace {

void AppendUint(uint64_t v, std::string* out) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, end);
}

void AppendInt(int64_t v, std::string* out) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, end);
}

// HELP text escapes backslash and newline (not the double quote).
void AppendEscapedHelp(std::string_view help, std::string* out) {
  for (char c : help) {
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '\n') {
      out->append("\\n");
    } else {
      out->push_back(c);
    }
  }
}

// name[suffix]{labels[,extra="value"]} -- the space before the value included.
void AppendHead(const prometheus::MetricFamily& family, const prometheus::ClientMetric& metric,
                std::string_view suffix, std::string_view extra_name, std::string_view extra_value,
                std::string* out) {
  out->append(family.name);
  out->append(suffix);
  if (!metric.label.empty() || !extra_name.empty()) {
    out->push_back('{');
    bool first = true;
    for (const prometheus::ClientMetric::Label& l : metric.label) {
      if (!first) out->push_back(',');
      first = false;
      out->append(l.name);
      out->append("=\"");
      AppendEscapedLabelValue(l.value, out);
      out->push_back('"');
    }
    if (!extra_name.empty()) {
      if (!first) out->push_back(',');
      out->append(extra_name);
      out->append("=\"");
      out->append(extra_value);
      out->push_back('"');
    }
    out->push_back('}');
  }
  out->push_back(' ');
}

void AppendTail(const prometheus::ClientMetric& metric, std::string* out) {
  if (metric.timestamp_ms != 0) {
    out->push_back(' ');
    AppendInt(metric.timestamp_ms, out);
  }
  out->push_back('\n');
}

std::string ValueString(double v) {
  std::string s;
  AppendValue(v, &s);
  return s;
}

void AppendSimple(const prometheus::MetricFamily& family, const prometheus::ClientMetric& metric,
                  double value, std::string* out) {
  AppendHead(family, metric, "", "", "", out);
  AppendValue(value, out);
  AppendTail(metric, out);
}

// The _sum and _count series that end a summary and a histogram.
void AppendSumAndCount(const prometheus::MetricFamily& family,
                       const prometheus::ClientMetric& metric, double sum, uint64_t count,
                       std::string* out) {
  AppendHead(family, metric, "_sum", "", "", out);
  AppendValue(sum, out);
  AppendTail(metric, out);
  AppendHead(family, metric, "_count", "", "", out);
  AppendUint(count, out);
  AppendTail(metric, out);
}

void AppendSummary(const prometheus::MetricFamily& family, const prometheus::ClientMetric& metric,
                   std::string* out) {
  const prometheus::ClientMetric::Summary& s = metric.summary;
  for (const prometheus::ClientMetric::Quantile& q : s.quantile) {
    AppendHead(family, metric, "", "quantile", ValueString(q.quantile), out);
    AppendValue(q.value, out);
    AppendTail(metric, out);
  }
  AppendSumAndCount(family, metric, s.sample_sum, s.sample_count, out);
}

void AppendHistogram(const prometheus::MetricFamily& family,
                     const prometheus::ClientMetric& metric, std::string* out) {
  const prometheus::ClientMetric::Histogram& h = metric.histogram;
  bool has_inf = false;
  for (const prometheus::ClientMetric::Bucket& b : h.bucket) {
    has_inf = has_inf || b.upper_bound == std::numeric_limits<double>::infinity();
    AppendHead(family, metric, "_bucket", "le", ValueString(b.upper_bound), out);
    AppendUint(b.cumulative_count, out);
    AppendTail(metric, out);
  }
  if (!has_inf) {
    AppendHead(family, metric, "_bucket", "le", "+Inf", out);
    AppendUint(h.sample_count, out);
    AppendTail(metric, out);
  }
  AppendSumAndCount(family, metric, h.sample_sum, h.sample_count, out);
}

const char* TypeName(prometheus::MetricType type) {
  switch (type) {
    case prometheus::MetricType::Counter:
      return "counter";
    case prometheus::MetricType::Gauge:
      return "gauge";
    case prometheus::MetricType::Summary:
      return "summary";
    case prometheus::MetricType::Histogram:
      return "histogram";
    case prometheus::MetricType::Untyped:
      break;
  }
  return "untyped";
}

}  // namespace

void AppendValue(double v, std::string* out) {
  if (std::isnan(v)) {
    out->append("NaN");
    return;
  }
  if (std::isinf(v)) {
    out->append(v < 0 ? "-Inf" : "+Inf");
    return;
  }
  // Counters are integers stored as doubles: print those without the
  // general algorithm (exact below 2^53, where every integer is one).
  if (v >= 0 && v < 9007199254740992.0 && v == std::floor(v)) {
    AppendUint(static_cast<uint64_t>(v), out);
    return;
  }
  // As printf's %g picks (and prometheus-cpp's stream did): plain decimals
  // for exponents -4 to 15, else scientific; shortest digits either way.
  // It matters for le and quantile labels, whose text is part of the
  // series' identity: 0.0005 must stay "0.0005", not become "5e-04".
  const double mag = std::fabs(v);
  const bool plain = mag >= 1e-4 && mag < 1e16;
  char buf[400];  // fixed notation of a value near 1e16 fits easily
  auto [end, ec] =
      std::to_chars(buf, buf + sizeof(buf), v,
                    plain ? std::chars_format::fixed : std::chars_format::scientific);
  out->append(buf, end);
}

void AppendEscapedLabelValue(std::string_view value, std::string* out) {
  size_t start = 0;
  for (size_t i = 0; i < value.size(); ++i) {
    const char c = value[i];
    if (c != '\\' && c != '"' && c != '\n') continue;
    out->append(value.substr(start, i - start));
    out->append(c == '\n' ? "\\n" : c == '"' ? "\\\"" : "\\\\");
    start = i + 1;
  }
  out->append(value.substr(start));
}

void AppendFamilyHeader(std::string_view name, std::string_view help,
                        prometheus::MetricType type, std::string* out) {
  if (!help.empty()) {
    out->append("# HELP ");
    out->append(name);
    out->push_back(' ');
    AppendEscapedHelp(help, out);
    out->push_back('\n');
  }
  out->append("# TYPE ");
  out->append(name);
  out->push_back(' ');
  out->append(TypeName(type));
  out->push_back('\n');
}

void AppendFamily(const prometheus::MetricFamily& family, std::string* out) {
  AppendFamilyHeader(family.name, family.help, family.type, out);
  for (const prometheus::ClientMetric& m : family.metric) {
    switch (family.type) {
      case prometheus::MetricType::Counter:
        AppendSimple(family, m, m.counter.value, out);
        break;
      case prometheus::MetricType::Gauge:
        AppendSimple(family, m, m.gauge.value, out);
        break;
      case prometheus::MetricType::Untyped:
        AppendSimple(family, m, m.untyped.value, out);
        break;
      case prometheus::MetricType::Summary:
        AppendSummary(family, m, out);
        break;
      case prometheus::MetricType::Histogram:
        AppendHistogram(family, m, out);
        break;
    }
  }
}

std::string Expose(const std::vector<prometheus::MetricFamily>& families) {
  // About 110 bytes a series on roced's families; reserve once.
  size_t series = 0;
  for (const prometheus::MetricFamily& f : families) series += f.metric.size();
  std::string out;
  out.reserve(families.size() * 160 + series * 112);
  for (const prometheus::MetricFamily& f : families) AppendFamily(f, &out);
  return out;
}

}  // namespace roced::metrics

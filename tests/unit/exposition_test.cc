// The scrape path's own pieces: the text exposition writer (against
// prometheus-cpp's TextSerializer, sample for sample), gzip, and the
// Accept-Encoding reading.
#include "metrics/exposition.h"

#include <zlib.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
#include "util/gzip.h"

namespace roced::metrics {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using ::testing::HasSubstr;

// Series (name and labels exactly as written) -> value, from exposition
// text; HELP and TYPE lines by family. Values are parsed as Prometheus does
// (NaN in any case, +Inf, -Inf).
struct Parsed {
  std::map<std::string, double> samples;
  std::map<std::string, std::string> help, type;
  int nans = 0;
};

Parsed Parse(const std::string& text) {
  Parsed p;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (absl::ConsumePrefix(&line, "# HELP ")) {
      const size_t sp = line.find(' ');
      p.help[std::string(line.substr(0, sp))] = std::string(line.substr(sp + 1));
      continue;
    }
    if (absl::ConsumePrefix(&line, "# TYPE ")) {
      const size_t sp = line.find(' ');
      p.type[std::string(line.substr(0, sp))] = std::string(line.substr(sp + 1));
      continue;
    }
    // The value follows the last space outside the labels; a timestamp
    // would follow it (none in these families unless set).
    const size_t close = line.rfind('}');
    const size_t sp = line.find(' ', close == absl::string_view::npos ? 0 : close);
    std::string series(line.substr(0, sp));
    std::string value(line.substr(sp + 1));
    const size_t ts = value.find(' ');
    if (ts != std::string::npos) {
      series += "@" + value.substr(ts + 1);
      value.resize(ts);
    }
    double v;
    if (absl::AsciiStrToLower(value) == "nan") {
      ++p.nans;
      continue;
    } else if (value == "+Inf") {
      v = std::numeric_limits<double>::infinity();
    } else if (value == "-Inf") {
      v = -std::numeric_limits<double>::infinity();
    } else {
      EXPECT_TRUE(absl::SimpleAtod(value, &v)) << line;
    }
    // Both writers spell label values of le/quantile their own way
    // (0.5 vs 0.500000): key them by the number.
    for (const char* extra : {"le=\"", "quantile=\""}) {
      const size_t at = series.find(extra);
      if (at == std::string::npos) continue;
      const size_t start = at + std::string(extra).size();
      const size_t end = series.find('"', start);
      double bound;
      const std::string raw = series.substr(start, end - start);
      if (raw != "+Inf" && absl::SimpleAtod(raw, &bound)) {
        series.replace(start, end - start, absl::StrCat(bound));
      }
    }
    EXPECT_EQ(p.samples.count(series), 0u) << "series written twice: " << series;
    p.samples[series] = v;
  }
  return p;
}

ClientMetric WithLabels(std::vector<ClientMetric::Label> labels) {
  ClientMetric m;
  m.label = std::move(labels);
  return m;
}

// Families of every type, with values that fixed six-decimal notation
// (TextSerializer's) writes exactly.
std::vector<MetricFamily> EveryKind() {
  std::vector<MetricFamily> out;
  MetricFamily counters{"roced_rdma_hw_counters_total", "Per-port hw_counters.",
                        MetricType::Counter, {}};
  std::mt19937_64 rnd(7);
  for (int d = 0; d < 4; ++d) {
    for (const char* c : {"np_cnp_sent", "out_of_sequence", "rx_write_requests"}) {
      ClientMetric m = WithLabels({{"device", absl::StrCat("mlx5_", d)},
                                   {"port", "1"},
                                   {"netdev", absl::StrCat("ens", d, "f0")},
                                   {"counter", c}});
      m.counter.value = static_cast<double>(rnd() >> 24);  // up to 2^40
      counters.metric.push_back(std::move(m));
    }
  }
  out.push_back(std::move(counters));

  MetricFamily gauges{"roced_info", "Labels with \"quotes\", a backslash \\ and a newline.",
                      MetricType::Gauge, {}};
  // (No newline in a label value here: TextSerializer writes a backslash
  // and then the newline itself, which breaks the line.)
  ClientMetric g = WithLabels({{"path", "C:\\dir"}, {"msg", "say \"hi\""}});
  g.gauge.value = 0.5;
  gauges.metric.push_back(g);
  ClientMetric g2;  // no labels
  g2.gauge.value = -3.25;
  gauges.metric.push_back(g2);
  ClientMetric inf = WithLabels({{"kind", "inf"}});
  inf.gauge.value = std::numeric_limits<double>::infinity();
  gauges.metric.push_back(inf);
  ClientMetric ninf = WithLabels({{"kind", "-inf"}});
  ninf.gauge.value = -std::numeric_limits<double>::infinity();
  gauges.metric.push_back(ninf);
  ClientMetric nan = WithLabels({{"kind", "nan"}});
  nan.gauge.value = std::nan("");
  gauges.metric.push_back(nan);
  out.push_back(std::move(gauges));

  MetricFamily hist{"roced_probe_rtt_seconds", "RTT.", MetricType::Histogram, {}};
  ClientMetric h = WithLabels({{"peer", "node2"}});
  h.histogram.sample_count = 10;
  h.histogram.sample_sum = 0.125;
  h.histogram.bucket = {{2, 0.001}, {7, 0.01}, {9, 0.1}};
  hist.metric.push_back(h);
  out.push_back(std::move(hist));

  MetricFamily summ{"roced_summary", "", MetricType::Summary, {}};  // no HELP line
  ClientMetric s;
  s.summary.sample_count = 4;
  s.summary.sample_sum = 2.5;
  s.summary.quantile = {{0.5, 0.25}, {0.99, 1.5}};
  summ.metric.push_back(s);
  out.push_back(std::move(summ));

  MetricFamily untyped{"roced_untyped", "With a timestamp.", MetricType::Untyped, {}};
  ClientMetric u = WithLabels({{"a", "b"}});
  u.untyped.value = 42;
  u.timestamp_ms = 1700000000123;
  untyped.metric.push_back(u);
  out.push_back(std::move(untyped));
  return out;
}

TEST(Exposition, AgreesWithPrometheusCppSampleForSample) {
  const std::vector<MetricFamily> families = EveryKind();
  const std::string ours = Expose(families);
  const std::string theirs = prometheus::TextSerializer().Serialize(families);
  Parsed a = Parse(ours), b = Parse(theirs);
  EXPECT_EQ(a.samples, b.samples);
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.nans, 1);
  EXPECT_EQ(b.nans, 1);
  // 12 counters, 4 gauges (NaN apart), 3+1 buckets + sum + count, 2
  // quantiles + sum + count, 1 untyped.
  EXPECT_EQ(a.samples.size(), 12u + 4 + 6 + 4 + 1);
  // HELP differs only where TextSerializer leaves the newline unescaped.
  EXPECT_EQ(a.help.at("roced_rdma_hw_counters_total"), b.help.at("roced_rdma_hw_counters_total"));
  EXPECT_EQ(a.help.count("roced_summary"), 0u);
}

TEST(Exposition, WritesTheExactLines) {
  std::vector<MetricFamily> families = EveryKind();
  ClientMetric nl = WithLabels({{"msg", "two\nlines"}});
  families[1].metric.push_back(nl);
  const std::string text = Expose(families);
  EXPECT_THAT(text, HasSubstr("roced_info{msg=\"two\\nlines\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE roced_rdma_hw_counters_total counter\n"));
  EXPECT_THAT(text, HasSubstr("# HELP roced_info Labels with \"quotes\", a backslash \\\\ and a "
                              "newline.\n# TYPE roced_info gauge\n"));
  EXPECT_THAT(text, HasSubstr("roced_info{path=\"C:\\\\dir\",msg=\"say \\\"hi\\\"\"} 0.5\n"));
  EXPECT_THAT(text, HasSubstr("roced_info -3.25\n"));
  EXPECT_THAT(text, HasSubstr("roced_info{kind=\"inf\"} +Inf\n"));
  EXPECT_THAT(text, HasSubstr("roced_info{kind=\"-inf\"} -Inf\n"));
  EXPECT_THAT(text, HasSubstr("roced_info{kind=\"nan\"} NaN\n"));
  EXPECT_THAT(text, HasSubstr("roced_probe_rtt_seconds_bucket{peer=\"node2\",le=\"0.001\"} 2\n"
                              "roced_probe_rtt_seconds_bucket{peer=\"node2\",le=\"0.01\"} 7\n"
                              "roced_probe_rtt_seconds_bucket{peer=\"node2\",le=\"0.1\"} 9\n"
                              "roced_probe_rtt_seconds_bucket{peer=\"node2\",le=\"+Inf\"} 10\n"
                              "roced_probe_rtt_seconds_sum{peer=\"node2\"} 0.125\n"
                              "roced_probe_rtt_seconds_count{peer=\"node2\"} 10\n"));
  EXPECT_THAT(text, HasSubstr("roced_summary{quantile=\"0.99\"} 1.5\nroced_summary_sum 2.5\n"
                              "roced_summary_count 4\n"));
  EXPECT_THAT(text, HasSubstr("roced_untyped{a=\"b\"} 42 1700000000123\n"));
}

TEST(Exposition, NumbersInTheirShortestExactForm) {
  auto spelled = [](double v) {
    std::string s;
    AppendValue(v, &s);
    return s;
  };
  EXPECT_EQ(spelled(0), "0");
  EXPECT_EQ(spelled(-0.0), "0");
  EXPECT_EQ(spelled(1234567), "1234567");
  EXPECT_EQ(spelled(9007199254740991.0), "9007199254740991");  // 2^53 - 1
  EXPECT_EQ(spelled(18446744073709551616.0), "1.8446744073709552e+19");  // 2^64
  EXPECT_EQ(spelled(1e20), "1e+20");
  EXPECT_EQ(spelled(0.0005), "0.0005");  // a histogram bound: "5e-04" would be a new series
  EXPECT_EQ(spelled(0.0001), "0.0001");
  EXPECT_EQ(spelled(0.00001), "1e-05");
  EXPECT_EQ(spelled(123456.789), "123456.789");
  EXPECT_EQ(spelled(-0.25), "-0.25");
  EXPECT_EQ(spelled(0.1), "0.1");
  EXPECT_EQ(spelled(1e-9), "1e-09");
  EXPECT_EQ(spelled(-2.5), "-2.5");
  // Every spelling reads back as the same double.
  std::mt19937_64 rnd(11);
  for (int i = 0; i < 10000; ++i) {
    const double v = std::ldexp(static_cast<double>(rnd() >> 11), static_cast<int>(rnd() % 120) - 80);
    double back;
    ASSERT_TRUE(absl::SimpleAtod(spelled(v), &back));
    ASSERT_EQ(back, v) << spelled(v);
  }
}

TEST(Exposition, HistogramWithAnInfiniteBucketIsNotGivenASecond) {
  MetricFamily f{"h", "", MetricType::Histogram, {}};
  ClientMetric m;
  m.histogram.sample_count = 3;
  m.histogram.bucket = {{1, 1}, {3, std::numeric_limits<double>::infinity()}};
  f.metric.push_back(m);
  const std::string text = Expose({f});
  EXPECT_EQ(text,
            "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 3\nh_sum 0\n"
            "h_count 3\n");
}

std::string Gunzip(const std::string& in) {
  z_stream zs{};
  EXPECT_EQ(inflateInit2(&zs, 15 + 16), Z_OK);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  std::string out;
  char buf[65536];
  int rc;
  do {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - zs.avail_out);
  } while (rc == Z_OK);
  EXPECT_EQ(rc, Z_STREAM_END);
  EXPECT_EQ(zs.avail_in, 0u) << "bytes after the gzip member";
  inflateEnd(&zs);
  return out;
}

TEST(Gzip, RoundTripsAndReusesItsState) {
  util::GzipEncoder enc(1);
  std::mt19937_64 rnd(3);
  std::string out;
  for (size_t size : {size_t{0}, size_t{1}, size_t{1000}, size_t{300000}, size_t{17}}) {
    std::string in;
    for (size_t i = 0; i < size; ++i) in.push_back(static_cast<char>('a' + rnd() % 8));
    ASSERT_TRUE(enc.Compress(in, &out).ok());
    EXPECT_EQ(out.substr(0, 2), "\x1f\x8b") << "gzip magic";
    EXPECT_EQ(Gunzip(out), in) << size;
  }
  // Incompressible input: the output grows past the input's size, to
  // zlib's bound, and still round-trips.
  std::string noise(300000, '\0');
  for (char& c : noise) c = static_cast<char>(rnd());
  ASSERT_TRUE(enc.Compress(noise, &out).ok());
  EXPECT_GT(out.size(), noise.size());
  EXPECT_EQ(Gunzip(out), noise);
  // Exposition text compresses well even at level 1, and the output holds
  // no more than it needs: not zlib's worst case (the input's size) touched
  // on every scrape.
  std::string text = Expose(EveryKind());
  while (text.size() < 200000) text += text;
  std::string fresh;
  ASSERT_TRUE(enc.Compress(text, &fresh).ok());
  EXPECT_LT(fresh.size() * 5, text.size());
  EXPECT_LT(fresh.capacity(), text.size() / 2);
  EXPECT_EQ(Gunzip(fresh), text);
}

// The deflate state's size is the caller's: zlib's own (15, 8) round-trips
// the same input as the small default, and a size zlib does not take makes
// every call fail instead of encoding with something else.
TEST(Gzip, TakesTheStateSizeWithinZlibsRange) {
  const std::string text = Expose(EveryKind());
  std::string out;
  util::GzipEncoder zlib_default(1, 15, 8);
  ASSERT_TRUE(zlib_default.Compress(text, &out).ok());
  EXPECT_EQ(Gunzip(out), text);
  for (auto [bits, mem] : {std::pair{8, 6}, std::pair{16, 6}, std::pair{12, 0}, std::pair{12, 10}}) {
    util::GzipEncoder bad(1, bits, mem);
    absl::Status s = bad.Compress(text, &out);
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << bits << " " << mem;
  }
}

TEST(Gzip, AcceptEncodingAsRfc9110ReadsIt) {
  using util::AcceptsGzip;
  EXPECT_TRUE(AcceptsGzip("gzip"));
  EXPECT_TRUE(AcceptsGzip("deflate, gzip;q=0.5"));
  EXPECT_TRUE(AcceptsGzip("GZIP"));
  EXPECT_TRUE(AcceptsGzip("x-gzip"));
  EXPECT_TRUE(AcceptsGzip("br;q=1.0, *;q=0.1"));
  EXPECT_FALSE(AcceptsGzip(nullptr));
  EXPECT_FALSE(AcceptsGzip(""));
  EXPECT_FALSE(AcceptsGzip("identity"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzip; q=0.000"));
  EXPECT_FALSE(AcceptsGzip("*;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0, *"));  // named beats the wildcard
  EXPECT_FALSE(AcceptsGzip("deflate"));
}

}  // namespace
}  // namespace roced::metrics

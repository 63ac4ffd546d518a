#include "probe/stats.h"

#include <algorithm>
#include <cmath>

namespace roced::probe {

double QuantileOfSorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  double pos = std::floor(q * static_cast<double>(sorted.size()));
  size_t index = pos < 0 ? 0 : static_cast<size_t>(pos);
  if (index >= sorted.size()) index = sorted.size() - 1;
  return sorted[index];
}

roced::v1::LatencyStats LatencyStatsFromRoundTrips(const std::vector<int64_t>& rtt_ns) {
  roced::v1::LatencyStats stats;
  if (rtt_ns.empty()) return stats;
  std::vector<double> us;
  us.reserve(rtt_ns.size());
  for (int64_t ns : rtt_ns) us.push_back(static_cast<double>(ns) / 2000.0);
  std::sort(us.begin(), us.end());
  double sum = 0;
  for (double v : us) sum += v;
  const double n = static_cast<double>(us.size());
  const double mean = sum / n;
  double sq = 0;
  for (double v : us) sq += (v - mean) * (v - mean);
  stats.set_min_us(us.front());
  stats.set_max_us(us.back());
  stats.set_p50_us(QuantileOfSorted(us, 0.50));
  stats.set_p90_us(QuantileOfSorted(us, 0.90));
  stats.set_p99_us(QuantileOfSorted(us, 0.99));
  stats.set_p999_us(QuantileOfSorted(us, 0.999));
  stats.set_mean_us(mean);
  stats.set_stdev_us(std::sqrt(sq / n));
  stats.set_samples(us.size());
  return stats;
}

roced::v1::BandwidthStats BandwidthStatsFrom(uint64_t bytes, uint64_t messages,
                                             absl::Duration elapsed,
                                             double peak_bits_per_second) {
  roced::v1::BandwidthStats stats;
  stats.set_bytes(bytes);
  stats.set_messages(messages);
  const double seconds = absl::ToDoubleSeconds(elapsed);
  if (seconds <= 0) return stats;
  const double bps = static_cast<double>(bytes) * 8.0 / seconds;
  stats.set_gbps(bps / 1e9);
  // A window can beat the average; a run shorter than one window has no
  // peak of its own.
  stats.set_peak_gbps(std::max(bps, peak_bits_per_second) / 1e9);
  stats.set_msg_rate_mpps(static_cast<double>(messages) / seconds / 1e6);
  return stats;
}

std::vector<double> LatencyBucketIncrements(const std::vector<int64_t>& rtt_ns,
                                            const std::vector<double>& bounds,
                                            double* sum_seconds) {
  std::vector<double> counts(bounds.size() + 1, 0.0);
  double sum = 0;
  for (int64_t ns : rtt_ns) {
    const double s = static_cast<double>(ns) / 2e9;
    sum += s;
    // Prometheus buckets are "less than or equal to the upper bound".
    auto it = std::lower_bound(bounds.begin(), bounds.end(), s);
    counts[static_cast<size_t>(it - bounds.begin())] += 1;
  }
  if (sum_seconds != nullptr) *sum_seconds = sum;
  return counts;
}

}  // namespace roced::probe

// Turns raw probe measurements into the figures perftest users read:
// latency as ib_write_lat reports it (one-way = half the round trip;
// min, median, percentiles, max, mean, stdev in microseconds) and
// bandwidth as ib_write_bw does (Gb/s average and peak, message rate).
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "roced/v1/agent.pb.h"

namespace roced::probe {

// The value at quantile `q` (0..1) of `sorted` (ascending, non-empty):
// element floor(q * n), clamped to the last one. This is how ib_write_lat
// picks its t_typical (element n/2) and percentiles, so the figures compare
// one to one.
double QuantileOfSorted(const std::vector<double>& sorted, double q);

// Latency statistics from round-trip times in nanoseconds. Each sample is
// halved (one-way latency, as ib_write_lat defines it). Empty input gives
// all zeros. stdev is the population standard deviation.
roced::v1::LatencyStats LatencyStatsFromRoundTrips(const std::vector<int64_t>& rtt_ns);

// Bandwidth statistics: `bytes` and `messages` completed in `elapsed`;
// `peak_bits_per_second` is the best rate seen over a sampling window (0
// when none was taken; the average is used then). Gb/s are 10^9 bits/s,
// as ib_write_bw --report_gbits prints them; the message rate is in
// millions per second.
roced::v1::BandwidthStats BandwidthStatsFrom(uint64_t bytes, uint64_t messages,
                                             absl::Duration elapsed,
                                             double peak_bits_per_second);

// Histogram bucket increments for `rtt_ns` (halved, in seconds) against
// `bounds` (ascending upper bounds, seconds), for
// prometheus::Histogram::ObserveMultiple: one count per bucket plus the
// +Inf bucket (size bounds.size() + 1). `sum_seconds` receives the sum.
std::vector<double> LatencyBucketIncrements(const std::vector<int64_t>& rtt_ns,
                                            const std::vector<double>& bounds,
                                            double* sum_seconds);

}  // namespace roced::probe

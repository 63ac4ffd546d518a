// CounterCollector on the fixture sysfs tree (expected exposition stored
// next to the fixture, node_exporter style) and with a stand-in for the
// ethtool reader, plus the GetCounters sets built from the same reading.
#include "metrics/counter_collector.h"
#include "metrics/dcb_collector.h"
#include "metrics/node_collector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <linux/dcbnl.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hal/sysfs_discovery.h"
#include "metrics/exposition.h"
#include "prometheus/text_serializer.h"

namespace roced::metrics {
namespace {

const std::string kFixture = std::string(ROCED_FIXTURES) + "/sysfs";
const std::string kExpected = std::string(ROCED_FIXTURES) + "/expected_metrics_counters.txt";

// Answers ReadStats from a table; netdevs not in it are NOT_FOUND. Counts
// calls so tests can tell a netdev was read once.
class FakeNetdevStatsReaderForTest : public hal::NetdevStatsReader {
 public:
  std::map<std::string, std::vector<hal::EthtoolStat>> stats;
  std::map<std::string, int> calls;
  absl::StatusOr<std::vector<hal::EthtoolStat>> ReadStats(const std::string& netdev) override {
    ++calls[netdev];
    auto it = stats.find(netdev);
    if (it == stats.end()) return absl::NotFoundError("netdev " + netdev);
    return it->second;
  }
};

std::vector<PortNetdev> FixturePorts() {
  hal::SysfsDiscovery discovery(hal::Paths{.sysfs = kFixture});
  auto devices = discovery.Discover();
  EXPECT_TRUE(devices.ok());
  google::protobuf::RepeatedPtrField<roced::v1::RdmaDevice> field(devices->begin(),
                                                                 devices->end());
  return PortNetdevs(field);
}

std::vector<hal::PortCounterSet> FixtureCounters() {
  hal::CounterFiles::Options o;
  o.rescan_interval = absl::InfiniteDuration();
  hal::CounterFiles files(hal::Paths{.sysfs = kFixture}, o);
  return files.Read();
}

std::string Serialize(const std::vector<prometheus::MetricFamily>& families) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

// family name -> "label=value,..." -> value
using Flat = std::map<std::string, std::map<std::string, double>>;
Flat Flatten(const std::vector<prometheus::MetricFamily>& families) {
  Flat out;
  for (const auto& f : families) {
    for (const auto& m : f.metric) {
      std::vector<std::string> l;
      for (const auto& label : m.label) l.push_back(absl::StrCat(label.name, "=", label.value));
      out[f.name][absl::StrJoin(l, ",")] =
          f.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
    }
  }
  return out;
}

TEST(CounterCollectorTest, FixtureTreeExpositionMatchesTheStoredExpectedOutput) {
  std::string got = Serialize(CounterCollector::Families(FixtureCounters(), FixturePorts(), {}));
  // ROCED_UPDATE_GOLDEN=1, as for every golden file (tests/fixtures/README.md).
  const char* update = std::getenv("ROCED_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(kExpected) << got;
    GTEST_SKIP() << "rewrote " << kExpected;
  }
  std::ifstream in(kExpected);
  ASSERT_TRUE(in.good()) << kExpected << " missing; run with ROCED_UPDATE_GOLDEN=1";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(got, want.str()) << "exposition changed; if intended, rerun with "
                                "ROCED_UPDATE_GOLDEN=1 and review the diff";
}

TEST(CounterCollectorTest, WellKnownCountersHaveOneNameOnMlx5AndRxe) {
  Flat f = Flatten(CounterCollector::Families(FixtureCounters(), FixturePorts(), {}));
  const std::string mlx = "device=mlx5_0,port=1,netdev=ens1f0";
  const std::string rxe = "device=rxe0,port=1,netdev=eth0";
  EXPECT_EQ(f["roced_rdma_out_of_sequence_total"][mlx], 100035);  // out_of_sequence
  EXPECT_EQ(f["roced_rdma_out_of_sequence_total"][rxe], 5);       // out_of_seq_request
  EXPECT_EQ(f["roced_rdma_packet_sequence_errors_total"][mlx], 100016);  // packet_seq_err
  EXPECT_EQ(f["roced_rdma_packet_sequence_errors_total"][rxe], 11);      // rcvd_seq_err
  EXPECT_EQ(f["roced_rdma_rnr_nak_retries_total"][mlx], 100019);  // rnr_nak_retry_err
  EXPECT_EQ(f["roced_rdma_rnr_nak_retries_total"][rxe], 7);       // rcvd_rnr_err
  EXPECT_EQ(f["roced_rdma_duplicate_requests_total"][mlx], 100020);
  EXPECT_EQ(f["roced_rdma_duplicate_requests_total"][rxe], 3);
  EXPECT_EQ(f["roced_rdma_cnp_sent_total"][mlx], 101201);
  EXPECT_EQ(f["roced_rdma_cnp_handled_total"][mlx], 101103);
  EXPECT_EQ(f["roced_rdma_ecn_marked_packets_total"][mlx], 101302);
  EXPECT_EQ(f["roced_rdma_local_ack_timeouts_total"][mlx], 100018);
  // rxe has no CNPs (no DCQCN): no series rather than a made-up zero.
  EXPECT_EQ(f["roced_rdma_cnp_sent_total"].count(rxe), 0u);
  EXPECT_EQ(f["roced_port_transmit_packets_total"][rxe], 48213);  // sent_pkts
  EXPECT_EQ(f["roced_port_receive_packets_total"][mlx], 1002718281);
}

TEST(CounterCollectorTest, RetransmitsAreMlx5sRetryCausesSummedAndRxesCompleterRetries) {
  Flat f = Flatten(CounterCollector::Families(FixtureCounters(), FixturePorts(), {}));
  // local_ack_timeout_err + packet_seq_err + implied_nak_seq_err
  EXPECT_EQ(f["roced_rdma_retransmits_total"]["device=mlx5_0,port=1,netdev=ens1f0"],
            100018 + 100016 + 100017);
  EXPECT_EQ(f["roced_rdma_retransmits_total"]["device=rxe0,port=1,netdev=eth0"], 6);
}

TEST(CounterCollectorTest, PortDataIsInBytesNotFourByteWords) {
  Flat f = Flatten(CounterCollector::Families(FixtureCounters(), FixturePorts(), {}));
  EXPECT_EQ(f["roced_port_transmit_bytes_total"]["device=mlx5_1,port=1,netdev=ens1f1"],
            200018446744.0 * 4);
  EXPECT_EQ(f["roced_port_receive_bytes_total"]["device=mlx5_1,port=1,netdev=ens1f1"],
            200027182818.0 * 4);
}

TEST(CounterCollectorTest, EveryOtherFileIsExportedGenericallyAndNoneTwice) {
  Flat f = Flatten(CounterCollector::Families(FixtureCounters(), FixturePorts(), {}));
  const std::string mlx = "device=mlx5_0,port=1,netdev=ens1f0,counter=";
  auto& hw = f["roced_rdma_hw_counters_total"];
  EXPECT_EQ(hw[mlx + "roce_adp_retrans"], 100022);
  EXPECT_EQ(hw[mlx + "rp_cnp_ignored"], 100004);
  // Part of the retransmit sum only: still visible on its own.
  EXPECT_EQ(hw[mlx + "implied_nak_seq_err"], 100017);
  // Sole source of a well-known metric: not repeated.
  EXPECT_EQ(hw.count(mlx + "np_cnp_sent"), 0u);
  EXPECT_EQ(hw.count(mlx + "local_ack_timeout_err"), 0u);
  EXPECT_EQ(hw.count(mlx + "lifespan"), 0u);
  auto& pma = f["roced_rdma_port_counters_total"];
  EXPECT_EQ(pma[mlx + "symbol_error"], 101);
  EXPECT_EQ(pma.count(mlx + "port_xmit_data"), 0u);
  EXPECT_EQ(hw["device=rxe0,port=1,netdev=eth0,counter=ack_deferred"], 13);
  EXPECT_EQ(hw.count("device=rxe0,port=1,netdev=eth0,counter=completer_retry_err"), 0u);

  // Every file of every set appears exactly once across all families.
  size_t files = 0;
  for (const auto& set : FixtureCounters()) files += set.values.size();
  size_t well_known = 0, generic = 0;
  for (const auto& [name, series] : f) {
    if (name == "roced_rdma_hw_counters_total" || name == "roced_rdma_port_counters_total") {
      generic += series.size();
    } else {
      well_known += series.size();
    }
  }
  // Every well-known series stands for one file, except the three mlx5
  // retransmit series: sums of files counted elsewhere.
  EXPECT_EQ(well_known - 3 + generic, files);
}

TEST(CounterCollectorTest, EveryFamilyIsACounterNamedWithTotal) {
  for (const auto& f : CounterCollector::Families(FixtureCounters(), FixturePorts(), {})) {
    EXPECT_EQ(f.type, prometheus::MetricType::Counter) << f.name;
    EXPECT_TRUE(f.name.size() > 6 && f.name.substr(f.name.size() - 6) == "_total") << f.name;
    EXPECT_FALSE(f.help.empty()) << f.name;
  }
}

TEST(CounterCollectorTest, EthtoolPfcStatisticsBecomePerPriorityFamiliesInBaseUnits) {
  FakeNetdevStatsReaderForTest reader;
  reader.stats["ens1f0"] = {{"rx_bytes", 999},
                            {"rx_prio3_pause", 10},
                            {"tx_prio3_pause", 4},
                            {"rx_prio3_pause_duration", 2500000},
                            {"rx_prio3_pause_transition", 9},
                            {"rx_prio3_buf_discard", 1},
                            {"rx_prio3_cong_discard", 2},
                            {"rx_prio3_marked", 3},
                            {"rx_pause_ctrl_phy", 5},
                            {"rx_discards_phy", 6},
                            {"tx_pause_storm_error_events", 1}};
  std::vector<PortNetdev> ports = {{"mlx5_0", 1, "ens1f0"}, {"mlx5_0", 2, "ens1f0"},
                                   {"mlx5_9", 1, "gone0"}, {"ib0", 1, ""}};
  std::vector<NetdevStats> netdevs = ReadNetdevStats(&reader, ports);
  EXPECT_EQ(reader.calls["ens1f0"], 1);  // shared by two ports, read once
  EXPECT_EQ(reader.calls.count(""), 0u);
  ASSERT_EQ(netdevs.size(), 1u);  // gone0 is NOT_FOUND: nothing to report
  Flat f = Flatten(CounterCollector::Families({}, ports, netdevs));
  // The driver's own statistic name is label `stat`.
  auto p3 = [](const char* stat) { return absl::StrCat("netdev=ens1f0,priority=3,stat=", stat); };
  auto tc3 = [](const char* stat) { return absl::StrCat("netdev=ens1f0,tc=3,stat=", stat); };  // per TC on mlx5
  auto port = [](const char* stat) { return absl::StrCat("netdev=ens1f0,stat=", stat); };
  EXPECT_EQ(f["roced_pfc_pause_frames_received_total"][p3("rx_prio3_pause")], 10);
  EXPECT_EQ(f["roced_pfc_pause_frames_sent_total"][p3("tx_prio3_pause")], 4);
  EXPECT_DOUBLE_EQ(f["roced_pfc_pause_received_duration_seconds_total"][p3("rx_prio3_pause_duration")], 2.5);
  EXPECT_EQ(f["roced_pfc_pause_transitions_total"][p3("rx_prio3_pause_transition")], 9);
  EXPECT_EQ(f["roced_netdev_tc_buffer_discards_total"][tc3("rx_prio3_buf_discard")], 1);
  EXPECT_EQ(f["roced_netdev_tc_congestion_discards_total"][tc3("rx_prio3_cong_discard")], 2);
  EXPECT_EQ(f["roced_netdev_tc_ecn_marked_packets_total"][tc3("rx_prio3_marked")], 3);
  EXPECT_EQ(f["roced_netdev_link_pause_frames_received_total"][port("rx_pause_ctrl_phy")], 5);
  EXPECT_EQ(f["roced_netdev_receive_discards_total"][port("rx_discards_phy")], 6);
  EXPECT_EQ(f["roced_pfc_tx_pause_storm_errors_total"][port("tx_pause_storm_error_events")], 1);
  for (const auto& [name, series] : f) {
    EXPECT_EQ(name.find("rx_bytes"), std::string::npos);
  }
  EXPECT_EQ(f.size(), 10u);
}

// The same vendor-neutral families from bnxt_en's and ice's names
// (bnxt_ethtool.c, ice_ethtool.c), each series keeping the driver's name.
TEST(CounterCollectorTest, BnxtAndIceStatisticsFeedTheSameFamilies) {
  FakeNetdevStatsReaderForTest reader;
  reader.stats["bnxt0"] = {{"rx_pfc_ena_frames_pri3", 10},  {"tx_pfc_ena_frames_pri3", 4},
                           {"pfc_pri3_rx_duration_us", 1500000}, {"pfc_pri3_rx_transitions", 9},
                           {"rx_discard_packets_cos3", 1}, {"rx_pause_frames", 5},
                           {"tx_packets_pri3", 77},        {"rx_stat_discard", 6}};
  reader.stats["ice0"] = {{"rx_priority_3_xoff.nic", 11}, {"tx_priority_3_xoff.nic", 2},
                          {"rx_priority_3_xon.nic", 8},   {"link_xoff_tx.nic", 3},
                          {"rx_dropped.nic", 7},          {"rx_priority_8_xoff.nic", 1}};
  std::vector<PortNetdev> ports = {{"bnxt_re0", 1, "bnxt0"}, {"irdma0", 1, "ice0"}};
  Flat f = Flatten(CounterCollector::Families({}, ports, ReadNetdevStats(&reader, ports)));
  EXPECT_EQ(f["roced_pfc_pause_frames_received_total"]["netdev=bnxt0,priority=3,stat=rx_pfc_ena_frames_pri3"], 10);
  EXPECT_EQ(f["roced_pfc_pause_frames_sent_total"]["netdev=bnxt0,priority=3,stat=tx_pfc_ena_frames_pri3"], 4);
  EXPECT_DOUBLE_EQ(
      f["roced_pfc_pause_received_duration_seconds_total"]["netdev=bnxt0,priority=3,stat=pfc_pri3_rx_duration_us"],
      1.5);
  EXPECT_EQ(f["roced_pfc_pause_transitions_total"]["netdev=bnxt0,priority=3,stat=pfc_pri3_rx_transitions"], 9);
  EXPECT_EQ(f["roced_netdev_tc_buffer_discards_total"]["netdev=bnxt0,tc=3,stat=rx_discard_packets_cos3"], 1);
  EXPECT_EQ(f["roced_netdev_link_pause_frames_received_total"]["netdev=bnxt0,stat=rx_pause_frames"], 5);
  EXPECT_EQ(f["roced_netdev_receive_discards_total"]["netdev=bnxt0,stat=rx_stat_discard"], 6);
  EXPECT_EQ(f["roced_pfc_pause_frames_received_total"]["netdev=ice0,priority=3,stat=rx_priority_3_xoff.nic"], 11);
  EXPECT_EQ(f["roced_pfc_pause_frames_sent_total"]["netdev=ice0,priority=3,stat=tx_priority_3_xoff.nic"], 2);
  EXPECT_EQ(f["roced_pfc_pause_transitions_total"]["netdev=ice0,priority=3,stat=rx_priority_3_xon.nic"], 8);
  EXPECT_EQ(f["roced_netdev_link_pause_frames_sent_total"]["netdev=ice0,stat=link_xoff_tx.nic"], 3);
  EXPECT_EQ(f["roced_netdev_receive_discards_total"]["netdev=ice0,stat=rx_dropped.nic"], 7);
  // tx_packets_pri3 feeds the PFC watchdog only; priority 8 does not exist.
  size_t series = 0;
  for (const auto& [name, by_labels] : f) series += by_labels.size();
  EXPECT_EQ(series, 12u);
}

TEST(CounterCollectorTest, CollectReadsFilesAndEthtoolOnEveryScrape) {
  hal::CounterFiles::Options o;
  o.rescan_interval = absl::InfiniteDuration();
  hal::CounterFiles files(hal::Paths{.sysfs = kFixture}, o);
  FakeNetdevStatsReaderForTest reader;
  reader.stats["eth0"] = {{"rx_prio0_pause", 1}};
  CounterCollector collector(&files, &reader, [] { return FixturePorts(); });
  Flat first = Flatten(collector.Collect());
  reader.stats["eth0"] = {{"rx_prio0_pause", 2}};
  Flat second = Flatten(collector.Collect());
  EXPECT_EQ(first["roced_pfc_pause_frames_received_total"]["netdev=eth0,priority=0,stat=rx_prio0_pause"], 1);
  EXPECT_EQ(second["roced_pfc_pause_frames_received_total"]["netdev=eth0,priority=0,stat=rx_prio0_pause"], 2);
  EXPECT_EQ(second["roced_rdma_cnp_sent_total"].size(), 3u);

  CounterCollector no_ethtool(&files, nullptr, [] { return FixturePorts(); });
  EXPECT_EQ(Flatten(no_ethtool.Collect()).count("roced_pfc_pause_frames_received_total"), 0u);
}

// The scrape path writes text directly; it must be byte for byte what the
// families it stands for are written as, for RDMA files and ethtool alike,
// and stay so when the collector reads the files again in place.
TEST(CounterCollectorTest, TextPathWritesExactlyWhatTheFamiliesSay) {
  FakeNetdevStatsReaderForTest reader;
  reader.stats["ens1f0"] = {{"rx_prio3_pause", 10}, {"rx_prio3_pause_duration", 2500000},
                            {"rx_pause_ctrl_phy", 5}, {"tx_pause_storm_error_events", 1}};
  std::vector<PortNetdev> ports = FixturePorts();
  ports.push_back({"mlx5_0", 2, "ens1f0"});
  std::vector<NetdevStats> netdevs = ReadNetdevStats(&reader, ports);
  std::vector<std::string> scratch;
  std::string text;
  CounterCollector::AppendText(FixtureCounters(), ports, netdevs, &scratch, &text);
  const std::string expected = Expose(CounterCollector::Families(FixtureCounters(), ports, netdevs));
  EXPECT_EQ(text, expected);
  EXPECT_THAT(text, ::testing::HasSubstr("roced_pfc_pause_received_duration_seconds_total{netdev=\"ens1f0\",priority=\"3\",stat=\"rx_prio3_pause_duration\"} 2.5\n"));
  // Scratch buffers reused: the same text again.
  text.clear();
  CounterCollector::AppendText(FixtureCounters(), ports, netdevs, &scratch, &text);
  EXPECT_EQ(text, expected);

  hal::CounterFiles::Options o;
  o.rescan_interval = absl::InfiniteDuration();
  hal::CounterFiles files(hal::Paths{.sysfs = kFixture}, o);
  CounterCollector collector(&files, &reader, [] { return FixturePorts(); });
  for (int i = 0; i < 3; ++i) {
    std::string scraped;
    collector.AppendText(&scraped);
    EXPECT_EQ(scraped, Expose(collector.Collect())) << "scrape " << i;
  }
}

TEST(BuildCounterSetsTest, SetsCarryStableNamesDriverNamesAndDerivedSums) {
  FakeNetdevStatsReaderForTest reader;
  reader.stats["ens1f0"] = {{"rx_prio3_pause", 10}, {"rx_pause_ctrl_phy", 5}, {"rx_bytes", 1}};
  std::vector<PortNetdev> ports = FixturePorts();
  std::vector<roced::v1::CounterSet> sets =
      BuildCounterSets(FixtureCounters(), ports, ReadNetdevStats(&reader, ports));
  std::map<std::string, const roced::v1::CounterSet*> by;
  for (const auto& s : sets) by[absl::StrCat(s.device(), "/", s.source(), "/", s.netdev())] = &s;
  ASSERT_EQ(sets.size(), 8u);  // 7 sysfs sets + 1 ethtool

  auto find = [](const roced::v1::CounterSet* s, const std::string& name) {
    for (const auto& c : s->counters()) {
      if (c.name() == name) return c;
    }
    return roced::v1::Counter();
  };
  const auto* hw = by["mlx5_0/hw_counters/ens1f0"];
  ASSERT_NE(hw, nullptr);
  EXPECT_EQ(hw->port(), 1u);
  EXPECT_EQ(find(hw, "cnp_sent").source_name(), "np_cnp_sent");
  EXPECT_EQ(find(hw, "cnp_sent").value(), 101201u);
  EXPECT_EQ(find(hw, "roce_adp_retrans").source_name(), "roce_adp_retrans");
  auto retrans = find(hw, "retransmits");
  EXPECT_EQ(retrans.source_name(), "local_ack_timeout_err+packet_seq_err+implied_nak_seq_err");
  EXPECT_EQ(retrans.value(), 100018u + 100016u + 100017u);
  const auto* pma = by["mlx5_0/counters/ens1f0"];
  ASSERT_NE(pma, nullptr);
  EXPECT_EQ(find(pma, "transmit_bytes").value(), 100018446744u * 4);
  EXPECT_EQ(find(pma, "transmit_bytes").source_name(), "port_xmit_data");
  const auto* rxe = by["rxe0/hw_counters/eth0"];
  ASSERT_NE(rxe, nullptr);
  EXPECT_EQ(find(rxe, "retransmits").source_name(), "completer_retry_err");

  const auto* eth = by["mlx5_0/ethtool/ens1f0"];
  ASSERT_NE(eth, nullptr);
  ASSERT_EQ(eth->counters_size(), 2);
  EXPECT_EQ(eth->counters(0).name(), "pfc_pause_frames_received");
  EXPECT_EQ(eth->counters(0).source_name(), "rx_prio3_pause");
  EXPECT_EQ(eth->counters(0).priority(), 3u);
  EXPECT_FALSE(eth->counters(1).has_priority());
}

TEST(DcbCollector, PfcEnableBitsAndRequestIndicationCountsPerNetdevAndPriority) {
  DcbPfcReading eth0{"eth0", {}, std::nullopt, std::nullopt};
  eth0.pfc.pfc_en = 0x08;  // priority 3
  eth0.pfc.requests[3] = 12;
  eth0.pfc.indications[3] = 3400;
  DcbPfcReading eth1{"eth1", {}, std::nullopt, std::nullopt};
  eth1.pfc.pfc_en = 0x90;  // priorities 4 and 7
  std::string text = Serialize(DcbCollector::Families({eth0, eth1}));
  EXPECT_THAT(text, ::testing::HasSubstr("# TYPE roced_dcb_pfc_enabled gauge"));
  EXPECT_THAT(text, ::testing::HasSubstr("# TYPE roced_dcb_pfc_requests_total counter"));
  EXPECT_THAT(text, ::testing::HasSubstr("roced_dcb_pfc_enabled{netdev=\"eth0\",priority=\"3\"} 1\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("roced_dcb_pfc_enabled{netdev=\"eth0\",priority=\"4\"} 0\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("roced_dcb_pfc_enabled{netdev=\"eth1\",priority=\"4\"} 1\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("roced_dcb_pfc_enabled{netdev=\"eth1\",priority=\"7\"} 1\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("roced_dcb_pfc_requests_total{netdev=\"eth0\",priority=\"3\"} 12\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("roced_dcb_pfc_indications_total{netdev=\"eth0\",priority=\"3\"} 3400\n"));
  // 8 priorities x 2 netdevs per family.
  size_t n = 0;
  for (size_t at = 0; (at = text.find("roced_dcb_pfc_indications_total{", at)) != std::string::npos; ++at) ++n;
  EXPECT_EQ(n, 16u);
}

TEST(DcbCollector, DcbxModeAndPriorityToTrafficClassWhereTheDriverReportsThem) {
  DcbPfcReading host{"eth0", {}, DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE, std::array<uint8_t, 8>{1, 0, 2, 3, 4, 5, 6, 7}};
  DcbPfcReading firmware{"eth1", {}, DCB_CAP_DCBX_VER_IEEE | DCB_CAP_DCBX_VER_CEE, std::nullopt};
  DcbPfcReading lld{"eth2", {}, DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_LLD_MANAGED, std::nullopt};
  DcbPfcReading silent{"eth3", {}, std::nullopt, std::nullopt};
  std::string text = Serialize(DcbCollector::Families({host, firmware, lld, silent}));
  EXPECT_THAT(text, ::testing::HasSubstr("roced_dcb_dcbx_host_mode{netdev=\"eth0\"} 1\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("roced_dcb_dcbx_host_mode{netdev=\"eth1\"} 0\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("roced_dcb_dcbx_host_mode{netdev=\"eth2\"} 0\n"));
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("roced_dcb_dcbx_host_mode{netdev=\"eth3\"}")));
  // mlx5's load state: priority 0 on TC 1, priority 1 on TC 0.
  EXPECT_THAT(text, ::testing::HasSubstr("roced_dcb_priority_traffic_class{netdev=\"eth0\",priority=\"0\",tc=\"1\"} 1\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("roced_dcb_priority_traffic_class{netdev=\"eth0\",priority=\"1\",tc=\"0\"} 1\n"));
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("roced_dcb_priority_traffic_class{netdev=\"eth1\"")));
}

TEST(DcbCollector, NoNetdevWithDcbGivesNoFamilies) {
  EXPECT_TRUE(DcbCollector::Families({}).empty());
  // A netdev without DCB support (veth here, the same on any kernel) is
  // skipped by Collect().
  hal::DcbNetlink dcb;
  DcbCollector c(&dcb, [] { return std::vector<std::string>{"lo"}; });
  EXPECT_TRUE(c.Collect().empty());
}

// Each RoCE port's driver as series: its identity, whether an agent in the
// NIC owns DCB, and a roced_device_capability per field (1 manageable).
TEST(NodeCollectorTest, DriverCapabilitiesBecomeSeriesPerPortAndField) {
  roced::v1::NodeState state;
  auto* q = state.add_interface_qos();
  q->set_netdev("eth0");
  q->set_rdma_device("bnxt_re0");
  q->set_port(1);
  auto* d = q->mutable_driver();
  d->set_name("bnxt_en");
  d->set_version("6.1.0");
  d->set_profile("bnxt_en");
  d->set_firmware_agent("the NIC firmware's LLDP/DCBX agent");
  auto* pfc = d->add_fields();
  pfc->set_field("qos.pfc");
  pfc->set_surface("dcbnl IEEE PFC");
  pfc->set_manageable(true);
  auto* buffers = d->add_fields();
  buffers->set_field("qos.buffers");
  buffers->set_surface("none");
  state.add_interface_qos()->set_netdev("eth1");  // driver unread: no series
  Flat f = Flatten(NodeCollector::Families(state));
  const std::string port = "device=bnxt_re0,port=1,netdev=eth0,driver=bnxt_en";
  EXPECT_EQ(f["roced_device_capability"][port + ",field=qos.pfc,surface=dcbnl IEEE PFC"], 1);
  EXPECT_EQ(f["roced_device_capability"].count(port + ",field=qos.buffers,surface=none"), 1u);
  EXPECT_EQ(f["roced_device_capability"][port + ",field=qos.buffers,surface=none"], 0);
  EXPECT_EQ(f["roced_dcb_firmware_agent"][port], 1);
  EXPECT_EQ(f["roced_netdev_driver_info"][port + ",version=6.1.0,firmware_version=,profile=bnxt_en"], 1);
  EXPECT_EQ(f["roced_device_capability"].size(), 2u);
}

}  // namespace
}  // namespace roced::metrics

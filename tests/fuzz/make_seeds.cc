// Writes the binary and generated seeds of tests/fuzz/corpus (run once by
// make_seeds.sh, which says how every seed was made; not a test):
//   config_proto/   each YAML file given, decoded by the agent's decoder and
//                   serialized as ApplyConfig carries it
//   accepted_state/ accepted.json as the agent writes it (StateJson of what
//                   ReadConfigFile, AcceptFromApply and Confirmed return)
//   netlink/        DCB replies and rtnetlink notifications laid out as the
//                   kernel sends them (built with libnl), with their
//                   selector byte
// Usage: roced_fuzz_seeds OUT_DIR JOURNAL_JSON YAML...
#include <linux/dcbnl.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "agent/core/config_lifecycle.h"
#include "agent/core/state_dir.h"
#include "mesh/probe_packet.h"
#include "model/validate.h"
#include "util/fs.h"
#include "util/proto_time.h"

namespace {

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

std::string Basename(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  return name.substr(0, name.find('.'));
}

// The bytes of `msg` (its header's length) after a selector byte.
std::string Bytes(char selector, const std::vector<nl_msg*>& msgs) {
  std::string out(1, selector);
  for (nl_msg* m : msgs) {
    nlmsghdr* hdr = nlmsg_hdr(m);
    out.append(reinterpret_cast<const char*>(hdr), NLMSG_ALIGN(hdr->nlmsg_len));
    nlmsg_free(m);
  }
  return out;
}

nl_msg* Dcb(int type, uint8_t cmd) {
  nl_msg* m = nlmsg_alloc_simple(type, 0);
  nlmsg_hdr(m)->nlmsg_seq = 1;
  dcbmsg d{};
  d.dcb_family = AF_UNSPEC;
  d.cmd = cmd;
  nlmsg_append(m, &d, sizeof(d), NLMSG_ALIGNTO);
  nla_put_string(m, DCB_ATTR_IFNAME, "eth0");
  return m;
}

nl_msg* Ack(int error) {
  nl_msg* m = nlmsg_alloc_simple(NLMSG_ERROR, 0);
  nlmsg_hdr(m)->nlmsg_seq = 1;
  nlmsgerr e{};
  e.error = -error;
  nlmsg_append(m, &e, sizeof(e), NLMSG_ALIGNTO);
  return m;
}

// DCB_CMD_IEEE_GET's reply for a lossless priority 3: ETS 50/50, PFC on 3
// with counts, DSCP 26 -> 3 and 48 -> 6, DCBX IEEE.
nl_msg* GetReply() {
  nl_msg* m = Dcb(RTM_GETDCB, DCB_CMD_IEEE_GET);
  nlattr* ieee = nla_nest_start(m, DCB_ATTR_IEEE);
  ieee_ets ets{};
  ets.ets_cap = 8;
  ets.tc_tx_bw[0] = ets.tc_tx_bw[1] = 50;
  ets.tc_tsa[0] = ets.tc_tsa[1] = IEEE_8021QAZ_TSA_ETS;
  ets.prio_tc[3] = 1;
  nla_put(m, DCB_ATTR_IEEE_ETS, sizeof(ets), &ets);
  ieee_pfc pfc{};
  pfc.pfc_cap = 8;
  pfc.pfc_en = 1 << 3;
  pfc.requests[3] = 12;
  pfc.indications[3] = 3400;
  nla_put(m, DCB_ATTR_IEEE_PFC, sizeof(pfc), &pfc);
  nlattr* table = nla_nest_start(m, DCB_ATTR_IEEE_APP_TABLE);
  for (auto [prio, dscp] : {std::pair<uint8_t, uint16_t>{3, 26}, {6, 48}}) {
    dcb_app app{};
    app.selector = IEEE_8021QAZ_APP_SEL_DSCP;
    app.priority = prio;
    app.protocol = dscp;
    nla_put(m, DCB_ATTR_IEEE_APP, sizeof(app), &app);
  }
  nla_nest_end(m, table);
  nla_nest_end(m, ieee);
  nla_put_u8(m, DCB_ATTR_DCBX, DCB_CAP_DCBX_VER_IEEE);
  return m;
}

nl_msg* SetReply(int8_t status) {
  nl_msg* m = Dcb(RTM_SETDCB, DCB_CMD_IEEE_SET);
  nla_put_u8(m, DCB_ATTR_IEEE, static_cast<uint8_t>(status));
  return m;
}

nl_msg* Link(int type, const char* name) {
  nl_msg* m = nlmsg_alloc_simple(type, 0);
  ifinfomsg ifi{};
  ifi.ifi_index = 2;
  nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO);
  nla_put_string(m, IFLA_IFNAME, name);
  nla_put_u32(m, IFLA_MTU, 9000);
  return m;
}

void Netlink(const std::string& dir) {
  Write(dir + "/get_lossless_prio3", Bytes(0, {GetReply(), Ack(0)}));
  Write(dir + "/get_no_dcb", Bytes(0, {Ack(EOPNOTSUPP)}));
  Write(dir + "/set_ok", Bytes(1, {SetReply(0), Ack(0)}));
  Write(dir + "/set_refused_by_driver", Bytes(1, {SetReply(-EINVAL), Ack(0)}));
  Write(dir + "/link_events", Bytes(2, {Link(RTM_NEWLINK, "eth0"), Link(RTM_DELLINK, "eth1")}));
  Write(dir + "/dcb_event", Bytes(2, {Dcb(RTM_SETDCB, DCB_CMD_IEEE_SET)}));
}

void Accepted(const std::string& dir, const std::string& yaml, const std::string& other_yaml,
              const std::string& journal_path) {
  auto file = roced::agent::ReadConfigFile(yaml, false);
  auto other = roced::agent::ReadConfigFile(other_yaml, false);
  auto journal = roced::agent::ParseJournalJson(*roced::util::ReadFile(journal_path));
  if (!file.ok() || !other.ok() || !journal.ok()) {
    std::fprintf(stderr, "cannot read the seed inputs\n");
    std::exit(1);
  }
  const absl::Time now = absl::FromUnixSeconds(1795000000);
  // The path the agent would have read (not this checkout's).
  const std::string path = "/etc/roced/roced.yaml";
  roced::v1::AcceptedConfig from_file = **file;
  from_file.set_path(path);
  from_file.set_generation(1);
  *from_file.mutable_accepted_at() = roced::util::ToProto(now);
  Write(dir + "/from_file.json", *roced::agent::StateJson(from_file));

  std::vector<roced::v1::PriorValue> prior(journal->prior().begin(), journal->prior().end());
  roced::v1::AcceptedConfig provisional = roced::agent::AcceptFromApply(
      from_file, path, (*other)->config(), absl::Minutes(2), now, prior);
  provisional.set_generation(2);
  *provisional.mutable_accepted_at() = roced::util::ToProto(now);
  Write(dir + "/provisional_grpc.json", *roced::agent::StateJson(provisional));

  roced::v1::AcceptedConfig confirmed = roced::agent::Confirmed(provisional);
  Write(dir + "/confirmed_grpc.json", *roced::agent::StateJson(confirmed));
}

// Mesh UD probes as the prober and the responder send them: a 64-byte
// request and the reply to a 1 KiB one (stamps from the NIC on both sides).
void ProbePackets(const std::string& dir) {
  roced::mesh::ProbePacket request;
  request.dscp = 26;
  request.flow_label = 3;
  request.sequence = 41;
  request.prober_key = 0x5eed5eed5eed5eedULL;
  request.t1_ns = 1795000000000000000ULL;
  const auto small = roced::mesh::EncodeProbe(request);
  request.size = 1024;
  request.prober_nic_clock = true;
  const auto reply = roced::mesh::EncodeProbe(
      roced::mesh::ReplyTo(request, 5000000000ULL, 5000012000ULL, /*nic_clock=*/true));
  if (!small.ok() || !reply.ok()) {
    std::fprintf(stderr, "probe_packet seeds: %s\n", std::string((small.ok() ? reply : small).status().message()).c_str());
    std::exit(1);
  }
  Write(dir + "/request_64", std::string(small->begin(), small->end()));
  Write(dir + "/reply_1024", std::string(reply->begin(), reply->end()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s OUT_DIR JOURNAL_JSON YAML...\n", argv[0]);
    return 2;
  }
  const std::string out = argv[1];
  for (int i = 3; i < argc; ++i) {
    std::vector<roced::v1::ValidationIssue> warnings;
    auto config = roced::model::LoadConfigFile(argv[i], &warnings);
    if (!config.ok()) {
      std::fprintf(stderr, "%s: %s\n", argv[i], std::string(config.status().message()).c_str());
      return 1;
    }
    Write(out + "/config_proto/" + Basename(argv[i]) + ".pb", config->SerializeAsString());
  }
  Netlink(out + "/netlink");
  ProbePackets(out + "/probe_packet");
  Accepted(out + "/accepted_state", argv[3], argv[argc - 1], argv[2]);
  return 0;
}

#include "hal/lldp.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "util/escape.h"
#include "util/utf8.h"

namespace roced::hal {
namespace {

using Bytes = std::span<const uint8_t>;
namespace v1 = roced::v1;

constexpr uint8_t kTlvEnd = 0;
constexpr uint8_t kTlvChassisId = 1;
constexpr uint8_t kTlvPortId = 2;
constexpr uint8_t kTlvTtl = 3;
constexpr uint8_t kTlvPortDescription = 4;
constexpr uint8_t kTlvSystemName = 5;
constexpr uint8_t kTlvOrgSpecific = 127;

constexpr uint32_t kOui8021 = 0x0080c2;
constexpr uint32_t kOui8023 = 0x00120f;
constexpr uint32_t kOuiCee = 0x001b21;

constexpr uint8_t k8021EtsConfig = 9;
constexpr uint8_t k8021EtsRecommendation = 10;
constexpr uint8_t k8021Pfc = 11;
constexpr uint8_t k8021AppPriority = 12;
constexpr uint8_t k8023MaxFrameSize = 4;
constexpr uint8_t kCeeDcbx = 2;

constexpr uint8_t kCeePriorityGroup = 2;
constexpr uint8_t kCeePfc = 3;
constexpr uint8_t kCeeApp = 4;
// Sub-TLV header of a CEE feature: oper version, max version, flags
// (bit 7 enable, bit 6 willing, bit 5 error), reserved subtype.
constexpr size_t kCeeFeatureHeader = 4;

struct Tlv {
  uint8_t type;
  Bytes value;
};

uint16_t Be16(Bytes b, size_t at) { return static_cast<uint16_t>(b[at] << 8 | b[at + 1]); }
uint32_t Be24(Bytes b, size_t at) { return uint32_t{b[at]} << 16 | uint32_t{b[at + 1]} << 8 | b[at + 2]; }

// The TLVs of `data` up to End (or the end of the buffer): a 16-bit header
// of type (7 bits) and length (9 bits), then the value. Every value lies
// inside `data`; a header or value running past it is an error.
absl::StatusOr<std::vector<Tlv>> SplitTlvs(Bytes data, absl::string_view what) {
  std::vector<Tlv> tlvs;
  size_t at = 0;
  while (at < data.size()) {
    if (data.size() - at < 2) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": TLV header cut short at byte ", at));
    }
    const uint16_t header = Be16(data, at);
    const uint8_t type = static_cast<uint8_t>(header >> 9);
    const size_t len = header & 0x1ff;
    at += 2;
    if (len > data.size() - at) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": TLV type ", type, " says ", len,
                                                     " bytes, ", data.size() - at, " are left"));
    }
    if (type == kTlvEnd) break;
    tlvs.push_back({type, data.subspan(at, len)});
    at += len;
  }
  return tlvs;
}

// Text as the switch sent it when that is valid UTF-8 without control
// characters, else escaped (\xHH): always a valid proto string and label.
std::string Text(Bytes b) {
  const absl::string_view raw(reinterpret_cast<const char*>(b.data()), std::min(b.size(), kMaxLldpText));
  bool plain = util::IsValidUtf8(raw);
  for (const char c : raw) plain = plain && static_cast<unsigned char>(c) >= 0x20 && c != 0x7f;
  return plain ? std::string(raw) : util::EscapeForLog(raw, kMaxLldpText);
}

std::string Hex(Bytes b, absl::string_view sep) {
  std::vector<std::string> parts;
  for (const uint8_t c : b.first(std::min(b.size(), kMaxLldpText))) parts.push_back(absl::StrFormat("%02x", c));
  return absl::StrJoin(parts, sep);
}

// An IANA address family number and the address: IPv4 and IPv6 as text.
std::string NetworkAddress(Bytes b) {
  if (b.size() == 5 && b[0] == 1) return absl::StrFormat("%d.%d.%d.%d", b[1], b[2], b[3], b[4]);
  if (b.size() == 17 && b[0] == 2) {
    std::vector<std::string> groups;
    for (size_t i = 1; i < 17; i += 2) groups.push_back(absl::StrFormat("%x", Be16(b, i)));
    return absl::StrJoin(groups, ":");
  }
  return Hex(b, "");
}

// Chassis ID subtypes 4 (MAC) and 5 (network address); port ID 3 and 4.
std::string IdText(Bytes id, bool is_mac, bool is_address) {
  if (is_mac && id.size() == 6) return Hex(id, ":");
  if (is_address) return NetworkAddress(id);
  return Text(id);
}

absl::Status DecodeMandatory(const std::vector<Tlv>& tlvs, v1::LldpNeighbor* out) {
  static constexpr uint8_t kOrder[] = {kTlvChassisId, kTlvPortId, kTlvTtl};
  static constexpr const char* kNames[] = {"chassis ID", "port ID", "TTL"};
  for (size_t i = 0; i < 3; ++i) {
    if (tlvs.size() <= i || tlvs[i].type != kOrder[i]) {
      return absl::InvalidArgumentError(absl::StrCat("LLDPDU: TLV ", i + 1, " must be the ", kNames[i],
                                                     " (802.1AB mandatory TLVs)"));
    }
  }
  const Bytes chassis = tlvs[0].value;
  const Bytes port = tlvs[1].value;
  if (chassis.size() < 2 || port.size() < 2) {
    return absl::InvalidArgumentError("LLDPDU: chassis and port ID need a subtype and at least one byte");
  }
  if (tlvs[2].value.size() < 2) return absl::InvalidArgumentError("LLDPDU: TTL TLV shorter than 2 bytes");
  out->set_chassis_id_subtype(ChassisIdSubtypeName(chassis[0]));
  out->set_chassis_id(IdText(chassis.subspan(1), chassis[0] == 4, chassis[0] == 5));
  out->set_port_id_subtype(PortIdSubtypeName(port[0]));
  out->set_port_id(IdText(port.subspan(1), port[0] == 3, port[0] == 4));
  out->set_ttl_seconds(Be16(tlvs[2].value, 0));
  return absl::OkStatus();
}

void Note(v1::LldpNeighbor* out, std::string note) {
  // Bounded like everything else a frame can make us keep.
  if (out->notes_size() < 16) out->add_notes(std::move(note));
}

// The 4-bit-per-priority table of ETS and CEE PG: priority 0 in the high
// nibble of the first byte.
void PriorityNibbles(Bytes four, google::protobuf::RepeatedField<uint32_t>* out) {
  for (size_t p = 0; p < 8; ++p) out->Add(p % 2 == 0 ? four[p / 2] >> 4 : four[p / 2] & 0x0f);
}

void Bytes8(Bytes eight, google::protobuf::RepeatedField<uint32_t>* out) {
  for (size_t i = 0; i < 8; ++i) out->Add(eight[i]);
}

// ETS configuration: flags byte, priority table (4), TC bandwidth (8), TSA
// (8). The recommendation has a reserved byte where the flags are.
bool DecodeEts(Bytes body, bool config, v1::SwitchEts* ets) {
  if (body.size() < 21) return false;
  ets->set_source(v1::DCB_SOURCE_LLDP_IEEE);
  if (config) {
    ets->set_willing(body[0] & 0x80);
    ets->set_cbs(body[0] & 0x40);
    const uint32_t max_tcs = body[0] & 0x07;
    ets->set_max_tcs(max_tcs == 0 ? 8 : max_tcs);  // 0 encodes 8
  }
  PriorityNibbles(body.subspan(1, 4), ets->mutable_priority_to_tc());
  Bytes8(body.subspan(5, 8), ets->mutable_tc_bandwidth());
  Bytes8(body.subspan(13, 8), ets->mutable_tsa());
  return true;
}

bool DecodePfc(Bytes body, v1::SwitchPfc* pfc) {
  if (body.size() < 2) return false;
  pfc->set_source(v1::DCB_SOURCE_LLDP_IEEE);
  pfc->set_willing(body[0] & 0x80);
  pfc->set_mbc(body[0] & 0x40);
  pfc->set_capability(body[0] & 0x0f);
  pfc->set_enabled(body[1]);
  return true;
}

void AddApp(v1::LldpNeighbor* out, v1::DcbSource source, uint32_t selector, uint32_t protocol,
            uint32_t priority, size_t* dropped) {
  if (static_cast<size_t>(out->apps_size()) >= kMaxLldpApps) {
    ++*dropped;
    return;
  }
  v1::SwitchApp* app = out->add_apps();
  app->set_source(source);
  app->set_selector(selector);
  app->set_protocol(protocol);
  app->set_priority(priority);
}

// One reserved byte, then 3-byte entries: priority (3 bits), reserved (2),
// selector (3); the 16-bit protocol.
bool DecodeIeeeApps(Bytes body, v1::LldpNeighbor* out, size_t* dropped) {
  if (body.empty() || (body.size() - 1) % 3 != 0) return false;
  for (size_t at = 1; at + 3 <= body.size(); at += 3) {
    AddApp(out, v1::DCB_SOURCE_LLDP_IEEE, body[at] & 0x07, Be16(body, at + 1), body[at] >> 5, dropped);
  }
  return true;
}

// The org-specific TLVs of IEEE 802.1 (DCB) and 802.3 (frame size).
void DecodeIeeeOrg(uint32_t oui, uint8_t subtype, Bytes body, v1::LldpNeighbor* out, size_t* dropped) {
  bool ok = true;
  if (oui == kOui8023 && subtype == k8023MaxFrameSize) {
    ok = body.size() >= 2;
    if (ok) out->set_max_frame_size(Be16(body, 0));
  } else if (oui == kOui8021 && subtype == k8021EtsConfig) {
    v1::SwitchEts ets;
    ok = DecodeEts(body, true, &ets);
    if (ok) *out->mutable_ets() = std::move(ets);
  } else if (oui == kOui8021 && subtype == k8021EtsRecommendation) {
    v1::SwitchEts ets;
    ok = DecodeEts(body, false, &ets);
    if (ok) *out->mutable_ets_recommendation() = std::move(ets);
  } else if (oui == kOui8021 && subtype == k8021Pfc) {
    v1::SwitchPfc pfc;
    ok = DecodePfc(body, &pfc);
    if (ok) *out->mutable_pfc() = pfc;
  } else if (oui == kOui8021 && subtype == k8021AppPriority) {
    ok = DecodeIeeeApps(body, out, dropped);
  }
  if (!ok) Note(out, absl::StrFormat("IEEE TLV %06x/%d of %d bytes is malformed: skipped", oui, subtype, body.size()));
}

// What the CEE TLV carried, kept apart until the IEEE TLVs are known (they
// win where both are present).
struct Cee {
  std::optional<v1::SwitchPfc> pfc;
  std::optional<v1::SwitchEts> pg;
};

bool DecodeCeeFeature(uint8_t type, Bytes value, Cee* cee, v1::LldpNeighbor* out, size_t* dropped) {
  if (value.size() < kCeeFeatureHeader) return false;
  const bool willing = value[2] & 0x40;
  const Bytes body = value.subspan(kCeeFeatureHeader);
  if (type == kCeePriorityGroup) {
    // PGID per priority (4 bytes), PG bandwidth (8), number of TCs (1).
    if (body.size() < 13) return false;
    v1::SwitchEts pg;
    pg.set_source(v1::DCB_SOURCE_LLDP_CEE);
    pg.set_willing(willing);
    PriorityNibbles(body.subspan(0, 4), pg.mutable_priority_to_tc());
    Bytes8(body.subspan(4, 8), pg.mutable_tc_bandwidth());
    pg.set_max_tcs(body[12]);
    cee->pg = pg;
  } else if (type == kCeePfc) {
    // Enabled priorities (1), number of TCs with PFC (1).
    if (body.size() < 2) return false;
    v1::SwitchPfc pfc;
    pfc.set_source(v1::DCB_SOURCE_LLDP_CEE);
    pfc.set_willing(willing);
    pfc.set_enabled(body[0]);
    pfc.set_capability(body[1]);
    cee->pfc = pfc;
  } else if (type == kCeeApp) {
    // 6-byte entries: protocol (2), the OUI's upper 6 bits and the selector
    // in the low 2 (0 EtherType, 1 TCP/UDP port; where Intel's ice driver
    // takes it; tcpdump prints the top 2 bits instead), the OUI's low bytes
    // (2), a priority bitmap (1).
    if (body.size() % 6 != 0) return false;
    for (size_t at = 0; at < body.size(); at += 6) {
      const uint32_t selector = (body[at + 2] & 0x03) == 0 ? 1 : 4;
      for (uint32_t p = 0; p < 8; ++p) {
        if (body[at + 5] & (1u << p)) AddApp(out, v1::DCB_SOURCE_LLDP_CEE, selector, Be16(body, at), p, dropped);
      }
    }
  }
  return true;
}

void DecodeCee(Bytes body, Cee* cee, v1::LldpNeighbor* out, size_t* dropped) {
  auto subs = SplitTlvs(body, "CEE DCBX TLV");
  if (!subs.ok()) {
    Note(out, std::string(subs.status().message()) + ": skipped");
    return;
  }
  for (const Tlv& sub : *subs) {
    if (!DecodeCeeFeature(sub.type, sub.value, cee, out, dropped)) {
      Note(out, absl::StrFormat("CEE feature %d of %d bytes is malformed: skipped", sub.type, sub.value.size()));
    }
  }
}

void DecodeOptional(const Tlv& tlv, Cee* cee, v1::LldpNeighbor* out, size_t* dropped) {
  if (tlv.type == kTlvSystemName) {
    out->set_system_name(Text(tlv.value));
  } else if (tlv.type == kTlvPortDescription) {
    out->set_port_description(Text(tlv.value));
  } else if (tlv.type == kTlvOrgSpecific) {
    if (tlv.value.size() < 4) {
      Note(out, "organizationally specific TLV shorter than its OUI and subtype: skipped");
      return;
    }
    const uint32_t oui = Be24(tlv.value, 0);
    const uint8_t subtype = tlv.value[3];
    const Bytes body = tlv.value.subspan(4);
    if (oui == kOuiCee && subtype == kCeeDcbx) {
      DecodeCee(body, cee, out, dropped);
    } else {
      DecodeIeeeOrg(oui, subtype, body, out, dropped);
    }
  }
}

// The CEE PFC and priority groups where no IEEE TLV gave them.
void MergeCee(const Cee& cee, v1::LldpNeighbor* out) {
  if (cee.pfc) {
    if (out->has_pfc()) {
      Note(out, "CEE PFC also advertised: the IEEE PFC TLV is used");
    } else {
      *out->mutable_pfc() = *cee.pfc;
    }
  }
  if (cee.pg) {
    if (out->has_ets()) {
      Note(out, "CEE priority groups also advertised: the IEEE ETS TLV is used");
    } else {
      *out->mutable_ets() = *cee.pg;
    }
  }
}

}  // namespace

const char* ChassisIdSubtypeName(uint32_t subtype) {
  static constexpr const char* kNames[] = {"",         "chassis_component", "interface_alias", "port_component",
                                           "mac_address", "network_address", "interface_name", "locally_assigned"};
  return subtype >= 1 && subtype <= 7 ? kNames[subtype] : "other";
}

const char* PortIdSubtypeName(uint32_t subtype) {
  static constexpr const char* kNames[] = {"",          "interface_alias", "port_component",   "mac_address",
                                           "network_address", "interface_name", "agent_circuit_id", "locally_assigned"};
  return subtype >= 1 && subtype <= 7 ? kNames[subtype] : "other";
}

absl::StatusOr<v1::LldpNeighbor> DecodeLldpdu(std::span<const uint8_t> pdu) {
  auto tlvs = SplitTlvs(pdu, "LLDPDU");
  if (!tlvs.ok()) return tlvs.status();
  v1::LldpNeighbor out;
  if (absl::Status s = DecodeMandatory(*tlvs, &out); !s.ok()) return s;
  Cee cee;
  size_t dropped = 0;
  for (size_t i = 3; i < tlvs->size(); ++i) DecodeOptional((*tlvs)[i], &cee, &out, &dropped);
  MergeCee(cee, &out);
  if (dropped > 0) {
    Note(&out, absl::StrCat(dropped, " application-table entries past the first ", kMaxLldpApps, " dropped"));
  }
  return out;
}

absl::StatusOr<v1::LldpNeighbor> DecodeLldpFrame(std::span<const uint8_t> frame) {
  constexpr size_t kMacs = 12;
  if (frame.size() < kMacs + 2) return absl::InvalidArgumentError("frame shorter than an Ethernet header");
  size_t at = kMacs;
  uint16_t ethertype = Be16(frame, at);
  if (ethertype == 0x8100 && frame.size() >= at + 6) {  // one 802.1Q tag
    at += 4;
    ethertype = Be16(frame, at);
  }
  if (ethertype != kEthPLldp) {
    return absl::InvalidArgumentError(absl::StrFormat("EtherType 0x%04x is not LLDP (0x88cc)", ethertype));
  }
  return DecodeLldpdu(frame.subspan(at + 2));
}

}  // namespace roced::hal

// Builds LLDP frames byte by byte for tests (the lab's switch stand-in,
// tests/lab/lib/lldp_switch.py, has its own encoder in Python): what a
// switch would send, and the malformed frames it should not.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace roced::testing {

class LldpFrameForTest {
 public:
  // Destination 01:80:c2:00:00:0e, source 02:00:00:00:00:01, EtherType
  // 0x88CC. Nothing else: the caller adds the TLVs in the order it wants.
  LldpFrameForTest() {
    bytes_ = {0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x88, 0xcc};
  }

  LldpFrameForTest& Tlv(uint8_t type, const std::vector<uint8_t>& value) {
    const uint16_t header = static_cast<uint16_t>(type << 9 | (value.size() & 0x1ff));
    bytes_.push_back(header >> 8);
    bytes_.push_back(header & 0xff);
    bytes_.insert(bytes_.end(), value.begin(), value.end());
    return *this;
  }
  LldpFrameForTest& ChassisMac(const std::vector<uint8_t>& mac) {
    std::vector<uint8_t> v = {4};
    v.insert(v.end(), mac.begin(), mac.end());
    return Tlv(1, v);
  }
  LldpFrameForTest& PortName(const std::string& name) { return Tlv(2, Text(5, name)); }
  LldpFrameForTest& Ttl(uint16_t seconds) { return Tlv(3, {static_cast<uint8_t>(seconds >> 8), static_cast<uint8_t>(seconds)}); }
  // Chassis (MAC), port name and TTL: the mandatory three.
  LldpFrameForTest& Mandatory(const std::string& port = "Ethernet12", uint16_t ttl = 120) {
    return ChassisMac({0x02, 0x00, 0x00, 0x00, 0x00, 0xaa}).PortName(port).Ttl(ttl);
  }
  LldpFrameForTest& SystemName(const std::string& name) { return Tlv(5, Text(-1, name)); }
  LldpFrameForTest& PortDescription(const std::string& text) { return Tlv(4, Text(-1, text)); }
  LldpFrameForTest& Org(uint32_t oui, uint8_t subtype, const std::vector<uint8_t>& body) {
    std::vector<uint8_t> v = {static_cast<uint8_t>(oui >> 16), static_cast<uint8_t>(oui >> 8), static_cast<uint8_t>(oui),
                              subtype};
    v.insert(v.end(), body.begin(), body.end());
    return Tlv(127, v);
  }
  LldpFrameForTest& MaxFrameSize(uint16_t size) {
    return Org(0x00120f, 4, {static_cast<uint8_t>(size >> 8), static_cast<uint8_t>(size)});
  }
  LldpFrameForTest& IeeePfc(bool willing, bool mbc, uint8_t cap, uint8_t enabled) {
    return Org(0x0080c2, 11, {static_cast<uint8_t>((willing ? 0x80 : 0) | (mbc ? 0x40 : 0) | (cap & 0x0f)), enabled});
  }
  // prio_tc: 8 traffic classes; bw and tsa: 8 entries. `config`: subtype 9
  // with the flags byte, else the recommendation (10) with a zero byte.
  LldpFrameForTest& IeeeEts(bool config, bool willing, uint8_t max_tcs, const std::vector<uint8_t>& prio_tc,
                            const std::vector<uint8_t>& bw, const std::vector<uint8_t>& tsa) {
    std::vector<uint8_t> body = {config ? static_cast<uint8_t>((willing ? 0x80 : 0) | (max_tcs & 7)) : uint8_t{0}};
    for (size_t p = 0; p < 8; p += 2) body.push_back(static_cast<uint8_t>(prio_tc[p] << 4 | (prio_tc[p + 1] & 0x0f)));
    body.insert(body.end(), bw.begin(), bw.end());
    body.insert(body.end(), tsa.begin(), tsa.end());
    return Org(0x0080c2, config ? 9 : 10, body);
  }
  // Entries of (priority, selector, protocol).
  LldpFrameForTest& IeeeApps(const std::vector<std::tuple<uint8_t, uint8_t, uint16_t>>& apps) {
    std::vector<uint8_t> body = {0};
    for (const auto& [prio, sel, proto] : apps) {
      body.push_back(static_cast<uint8_t>(prio << 5 | (sel & 7)));
      body.push_back(static_cast<uint8_t>(proto >> 8));
      body.push_back(static_cast<uint8_t>(proto));
    }
    return Org(0x0080c2, 12, body);
  }
  // A CEE DCBX TLV holding the given sub-TLVs (each from CeeFeature).
  LldpFrameForTest& Cee(const std::vector<std::vector<uint8_t>>& features) {
    std::vector<uint8_t> body;
    for (const auto& f : features) body.insert(body.end(), f.begin(), f.end());
    return Org(0x001b21, 2, body);
  }
  static std::vector<uint8_t> CeeFeature(uint8_t type, bool willing, const std::vector<uint8_t>& body) {
    const size_t len = 4 + body.size();
    std::vector<uint8_t> v = {static_cast<uint8_t>(type << 1 | (len >> 8)), static_cast<uint8_t>(len), 0, 0,
                              static_cast<uint8_t>(0x80 | (willing ? 0x40 : 0)), 0};
    v.insert(v.end(), body.begin(), body.end());
    return v;
  }
  LldpFrameForTest& End() { return Tlv(0, {}); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  // The text, after a subtype byte when `subtype` >= 0.
  static std::vector<uint8_t> Text(int subtype, const std::string& text) {
    std::vector<uint8_t> v;
    if (subtype >= 0) v.push_back(static_cast<uint8_t>(subtype));
    v.insert(v.end(), text.begin(), text.end());
    return v;
  }
  std::vector<uint8_t> bytes_;
};

}  // namespace roced::testing

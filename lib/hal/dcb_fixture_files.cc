#include "hal/dcb_fixture_files.h"

#include <linux/dcbnl.h>

#include <array>
#include <cstdint>
#include <set>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "util/fs.h"
#include "util/status_macros.h"

namespace roced::hal {

namespace {

std::vector<absl::string_view> Words(absl::string_view value) {
  return absl::StrSplit(value, absl::ByAnyChar(" \t"), absl::SkipEmpty());
}

absl::StatusOr<uint32_t> Number(absl::string_view word, uint32_t max) {
  uint32_t n = 0;
  if (!absl::SimpleAtoi(word, &n) || n > max) {
    return absl::InvalidArgumentError(absl::StrCat("'", word, "' is not a number 0-", max));
  }
  return n;
}

// Eight values, one per priority or traffic class, each at most `max`.
template <typename T>
absl::StatusOr<std::array<T, 8>> Eight(absl::string_view value, uint32_t max) {
  std::vector<absl::string_view> words = Words(value);
  if (words.size() != 8) return absl::InvalidArgumentError(absl::StrCat("8 values wanted, got ", words.size()));
  std::array<T, 8> out{};
  for (size_t i = 0; i < 8; ++i) {
    absl::StatusOr<uint32_t> n = Number(words[i], max);
    if (!n.ok()) return n.status();
    out[i] = static_cast<T>(*n);
  }
  return out;
}

absl::StatusOr<std::array<uint8_t, 8>> Tsas(absl::string_view value) {
  std::vector<absl::string_view> words = Words(value);
  if (words.size() != 8) return absl::InvalidArgumentError(absl::StrCat("8 values wanted, got ", words.size()));
  std::array<uint8_t, 8> out{};
  for (size_t i = 0; i < 8; ++i) {
    if (words[i] == "strict") out[i] = IEEE_8021QAZ_TSA_STRICT;
    else if (words[i] == "cbs") out[i] = IEEE_8021QAZ_TSA_CB_SHAPER;
    else if (words[i] == "ets") out[i] = IEEE_8021QAZ_TSA_ETS;
    else if (words[i] == "vendor") out[i] = IEEE_8021QAZ_TSA_VENDOR;
    else {
      absl::StatusOr<uint32_t> n = Number(words[i], 255);
      if (!n.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("'", words[i], "' is not strict, cbs, ets, vendor or 0-255"));
      }
      out[i] = static_cast<uint8_t>(*n);
    }
  }
  return out;
}

absl::StatusOr<uint8_t> DcbxBits(absl::string_view value) {
  uint8_t bits = 0;
  for (absl::string_view w : Words(value)) {
    if (w == "host") bits |= DCB_CAP_DCBX_HOST;
    else if (w == "lld_managed") bits |= DCB_CAP_DCBX_LLD_MANAGED;
    else if (w == "cee") bits |= DCB_CAP_DCBX_VER_CEE;
    else if (w == "ieee") bits |= DCB_CAP_DCBX_VER_IEEE;
    else if (w == "static") bits |= DCB_CAP_DCBX_STATIC;
    else return absl::InvalidArgumentError(absl::StrCat("'", w, "' is not host, lld_managed, cee, ieee or static"));
  }
  return bits;
}

absl::StatusOr<uint8_t> PriorityMask(absl::string_view value) {
  uint8_t mask = 0;
  for (absl::string_view w : Words(value)) {
    absl::StatusOr<uint32_t> p = Number(w, 7);
    if (!p.ok()) return p.status();
    mask |= static_cast<uint8_t>(1u << *p);
  }
  return mask;
}

absl::StatusOr<std::vector<DcbApp>> DscpApps(absl::string_view value) {
  std::vector<DcbApp> apps;
  for (absl::string_view w : Words(value)) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(w, absl::MaxSplits(':', 1));
    absl::StatusOr<uint32_t> dscp = Number(kv.first, 63);
    absl::StatusOr<uint32_t> prio = Number(kv.second, 7);
    if (!dscp.ok() || !prio.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("'", w, "' is not DSCP:PRIORITY (0-63:0-7)"));
    }
    apps.push_back({kAppSelectorDscp, static_cast<uint8_t>(*prio), static_cast<uint16_t>(*dscp)});
  }
  return apps;
}

absl::Status SetEtsKey(absl::string_view key, absl::string_view value, DcbReading* r) {
  DcbEts& e = r->ets ? *r->ets : r->ets.emplace();
  if (key == "ets.willing") {
    ASSIGN_OR_RETURN(const uint32_t willing, Number(value, 1));
    e.willing = willing != 0;
  } else if (key == "ets.prio_tc") {
    ASSIGN_OR_RETURN(e.prio_tc, Eight<uint8_t>(value, 7));
  } else if (key == "ets.tc_bw") {
    ASSIGN_OR_RETURN(e.tc_tx_bw, Eight<uint8_t>(value, 100));
  } else if (key == "ets.tsa") {
    ASSIGN_OR_RETURN(e.tc_tsa, Tsas(value));
  } else {
    return absl::InvalidArgumentError("unknown key");
  }
  return absl::OkStatus();
}

absl::Status SetPfcKey(absl::string_view key, absl::string_view value, DcbReading* r) {
  DcbPfc& p = r->pfc ? *r->pfc : r->pfc.emplace();
  if (key == "pfc.cap") {
    ASSIGN_OR_RETURN(const uint32_t cap, Number(value, 8));
    p.pfc_cap = static_cast<uint8_t>(cap);
  } else if (key == "pfc.enabled") {
    ASSIGN_OR_RETURN(p.pfc_en, PriorityMask(value));
  } else if (key == "pfc.delay") {
    ASSIGN_OR_RETURN(const uint32_t delay, Number(value, 65535));
    p.delay = static_cast<uint16_t>(delay);
  } else {
    return absl::InvalidArgumentError("unknown key");
  }
  return absl::OkStatus();
}

absl::Status SetBufferKey(absl::string_view key, absl::string_view value, DcbReading* r) {
  DcbBuffer& b = r->buffer ? *r->buffer : r->buffer.emplace();
  if (key == "buffer.prio2buffer") {
    ASSIGN_OR_RETURN(b.prio2buffer, Eight<uint8_t>(value, 7));
  } else if (key == "buffer.size") {
    ASSIGN_OR_RETURN(b.buffer_size, Eight<uint32_t>(value, UINT32_MAX));
  } else if (key == "buffer.total") {
    ASSIGN_OR_RETURN(b.total_size, Number(value, UINT32_MAX));
  } else {
    return absl::InvalidArgumentError("unknown key");
  }
  return absl::OkStatus();
}

absl::Status SetKey(absl::string_view key, absl::string_view value, DcbReading* r) {
  if (key == "dcbx") {
    ASSIGN_OR_RETURN(r->dcbx, DcbxBits(value));
    return absl::OkStatus();
  }
  if (key == "app.dscp") {
    ASSIGN_OR_RETURN(r->apps, DscpApps(value));
    return absl::OkStatus();
  }
  if (key == "driver") return absl::OkStatus();  // DcbFixtureDriverInfo's
  if (absl::StartsWith(key, "ets.")) return SetEtsKey(key, value, r);
  if (absl::StartsWith(key, "pfc.")) return SetPfcKey(key, value, r);
  if (absl::StartsWith(key, "buffer.")) return SetBufferKey(key, value, r);
  return absl::InvalidArgumentError("unknown key (dcbx, ets.*, pfc.*, app.dscp, buffer.*, driver)");
}

}  // namespace

absl::StatusOr<DcbReading> ParseDcbFixture(absl::string_view text) {
  DcbReading r;
  std::set<std::string> seen;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = line.substr(0, line.find('#'));
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_no, ": 'key: value' wanted"));
    }
    const absl::string_view key = absl::StripAsciiWhitespace(line.substr(0, colon));
    const absl::string_view value = absl::StripAsciiWhitespace(line.substr(colon + 1));
    if (!seen.insert(std::string(key)).second) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_no, ": ", key, " given twice"));
    }
    if (absl::Status s = SetKey(key, value, &r); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_no, ": ", key, ": ", s.message()));
    }
  }
  return r;
}

absl::StatusOr<DcbReading> DcbFixtureFiles::Get(const std::string& ifname) const {
  const std::string path = absl::StrCat(dir_, "/", ifname);
  absl::StatusOr<std::string> text = util::ReadRegularFile(path, kMaxDcbFixtureBytes, "DCB fixture");
  if (absl::IsNotFound(text.status())) {
    return absl::UnimplementedError(absl::StrCat(ifname, ": no DCB in the fixture (", path, " absent)"));
  }
  if (!text.ok()) return text.status();
  absl::StatusOr<DcbReading> r = ParseDcbFixture(*text);
  if (!r.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", r.status().message()));
  return r;
}

absl::StatusOr<DriverInfo> DcbFixtureDriverInfo::Driver(const std::string& netdev) const {
  const std::string path = absl::StrCat(dir_, "/", netdev);
  absl::StatusOr<std::string> text = util::ReadRegularFile(path, kMaxDcbFixtureBytes, "DCB fixture");
  if (!text.ok()) return text.status();
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    line = absl::StripAsciiWhitespace(line.substr(0, line.find('#')));
    if (!absl::ConsumePrefix(&line, "driver:")) continue;
    std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (words.empty()) break;
    return DriverInfo{DriverInfoText(words[0]), words.size() > 1 ? DriverInfoText(words[1]) : "", "", ""};
  }
  return absl::NotFoundError(absl::StrCat(netdev, ": no driver line in ", path));
}

absl::Status DcbFixtureFiles::ReadOnly(const std::string& ifname, absl::string_view what) const {
  return absl::FailedPreconditionError(
      absl::StrCat(ifname, ": ", what, " refused: the DCB fixture (", dir_, ") is read-only"));
}

absl::Status DcbFixtureFiles::SetEts(const std::string& ifname, const DcbEts&) const {
  return ReadOnly(ifname, "set ETS");
}
absl::Status DcbFixtureFiles::SetPfc(const std::string& ifname, const DcbPfc&) const {
  return ReadOnly(ifname, "set PFC");
}
absl::Status DcbFixtureFiles::SetBuffer(const std::string& ifname, const DcbBuffer&) const {
  return ReadOnly(ifname, "set buffers");
}
absl::Status DcbFixtureFiles::SetDcbx(const std::string& ifname, uint8_t) const {
  return ReadOnly(ifname, "set DCBX mode");
}
absl::Status DcbFixtureFiles::AddApps(const std::string& ifname, const std::vector<DcbApp>&) const {
  return ReadOnly(ifname, "add app entries");
}
absl::Status DcbFixtureFiles::DelApps(const std::string& ifname, const std::vector<DcbApp>&) const {
  return ReadOnly(ifname, "delete app entries");
}

}  // namespace roced::hal

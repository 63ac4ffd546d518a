#include "mesh/inventory.h"

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "util/ip_subnet.h"

namespace roced::mesh {
namespace {

constexpr const char* kColumnNames[] = {"NAME", "ADDRESS", "TOR", "POD"};
constexpr size_t kColumns = 4;

absl::Status Refuse(size_t line, size_t column, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("inventory line ", line, ", column ", column + 1, " (", kColumnNames[column], "): ", std::string(what)));
}

// The line's columns: split at spaces and tabs, the comment and a CR at
// the end left out.
std::vector<std::string_view> Columns(std::string_view line) {
  if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

absl::Status CheckField(size_t line, size_t column, std::string_view value) {
  if (value.size() > kMaxInventoryField) {
    return Refuse(line, column, absl::StrCat(value.size(), " bytes; at most ", kMaxInventoryField));
  }
  for (size_t i = 0; i < value.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c < 0x21 || c > 0x7e) {
      return Refuse(line, column,
                    absl::StrFormat("byte 0x%02x at offset %d; allowed: printable ASCII (0x21-0x7e)", c, i));
    }
  }
  return absl::OkStatus();
}

// host:port with a port in [1, 65535]; an IPv6 host in brackets.
absl::Status CheckAddress(size_t line, std::string_view value) {
  if (util::IsHostPort(value)) return absl::OkStatus();
  return Refuse(line, 1,
                absl::StrCat("'", std::string(value), "' is not host:port with a port in [1, 65535] (IPv6: [host]:port)"));
}

// One line's member, its fields checked.
absl::StatusOr<Member> ParseMember(size_t line, const std::vector<std::string_view>& columns) {
  if (columns.size() < 2 || columns.size() > kColumns) {
    return absl::InvalidArgumentError(absl::StrCat("inventory line ", line, ": ", columns.size(),
                                                   " column(s); expected NAME ADDRESS [TOR [POD]]"));
  }
  for (size_t c = 0; c < columns.size(); ++c) {
    if (absl::Status s = CheckField(line, c, columns[c]); !s.ok()) return s;
  }
  if (columns[0] == "-") return Refuse(line, 0, "'-' is not a name");
  if (absl::Status s = CheckAddress(line, columns[1]); !s.ok()) return s;
  Member m;
  m.name = std::string(columns[0]);
  m.address = std::string(columns[1]);
  if (columns.size() > 2 && columns[2] != "-") m.tor = std::string(columns[2]);
  if (columns.size() > 3 && columns[3] != "-") m.pod = std::string(columns[3]);
  return m;
}

}  // namespace

absl::StatusOr<std::vector<Member>> ParseInventory(std::string_view text) {
  if (text.size() > kMaxInventoryBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("inventory: ", text.size(), " bytes; at most ", kMaxInventoryBytes));
  }
  std::vector<Member> members;
  absl::flat_hash_map<std::string, size_t> line_of;  // name -> its line
  size_t line = 0;
  while (!text.empty()) {
    ++line;
    const size_t nl = text.find('\n');
    const std::string_view raw = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const std::vector<std::string_view> columns = Columns(raw);
    if (columns.empty()) continue;
    absl::StatusOr<Member> m = ParseMember(line, columns);
    if (!m.ok()) return m.status();
    if (members.size() == kMaxInventoryMembers) {
      return absl::InvalidArgumentError(
          absl::StrCat("inventory line ", line, ": more than ", kMaxInventoryMembers, " members"));
    }
    auto [it, added] = line_of.emplace(m->name, line);
    if (!added) return Refuse(line, 0, absl::StrCat("'", m->name, "' is already on line ", it->second));
    members.push_back(*std::move(m));
  }
  return members;
}

}  // namespace roced::mesh

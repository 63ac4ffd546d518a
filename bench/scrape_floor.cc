// The floor under a scrape of RDMA port counters, for
// bench/scrape_vs_node_exporter.sh: the counter files of a sysfs tree
// (class/infiniband/*/ports/*/{counters,hw_counters}/*), opened once and
// each read with pread on every iteration, written as exposition text with
// the labels roced gives them (device, port, netdev, counter; the label
// strings built once per series), and gzip-compressed at the level roced's
// /metrics uses when --gzip-level is not 0. No HTTP, no discovery, nothing
// else: what the work itself needs.
//
//   roced_scrape_floor --sysfs DIR [--iterations N] [--gzip-level L]
// Runs N iterations back to back and prints one line of JSON: median and
// p90 milliseconds, series, text and wire bytes. Back to back, every
// iteration finds the caches hot, which no scrape does (scrapes come
// seconds apart, other work in between): with --stdin instead it runs one
// iteration per line read from standard input and answers each with a line
// of JSON ({"ms", "text_bytes", "wire_bytes", "series"}), so a bench can
// interleave the floor's iterations with its scrapes.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "util/gzip.h"

namespace fs = std::filesystem;

namespace {

struct Series {
  int fd;
  std::string head;  // name{labels} and the space
};

std::string ReadLine(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

std::string NetdevOf(const fs::path& port) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(port / "gid_attrs" / "ndevs", ec)) {
    std::string n = ReadLine(e.path());
    if (!n.empty()) return n;
  }
  return "";
}

struct Args {
  std::string root;
  int iterations = 200;
  int level = 0;
  bool from_stdin = false;
};

// The command line; nullopt (after saying why) when it is not usable.
std::optional<Args> ParseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--stdin") {
      a.from_stdin = true;
      --i;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "roced_scrape_floor: %s needs a value\n", argv[i]);
      return std::nullopt;
    }
    if (flag == "--sysfs") a.root = argv[i + 1];
    else if (flag == "--iterations") a.iterations = std::atoi(argv[i + 1]);
    else if (flag == "--gzip-level") a.level = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "roced_scrape_floor: unknown flag %s\n", argv[i]);
      return std::nullopt;
    }
  }
  if (a.root.empty() || a.iterations < 1 || a.level < 0 || a.level > 9) {
    std::fprintf(stderr, "usage: roced_scrape_floor --sysfs DIR [--iterations N>0] [--gzip-level 0-9]\n");
    return std::nullopt;
  }
  return a;
}

constexpr const char* kNames[2] = {"roced_rdma_port_counters_total", "roced_rdma_hw_counters_total"};

std::vector<fs::path> SortedEntries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// Every counter file of the tree, opened, with its series' head; by family
// (counters, hw_counters).
std::array<std::vector<Series>, 2> OpenSeries(const std::string& root) {
  std::array<std::vector<Series>, 2> families;
  const char* dirs[2] = {"counters", "hw_counters"};
  for (const fs::path& dev : SortedEntries(fs::path(root) / "class" / "infiniband")) {
    for (const fs::path& port : SortedEntries(dev / "ports")) {
      const std::string netdev = NetdevOf(port);
      for (int k = 0; k < 2; ++k) {
        for (const fs::path& f : SortedEntries(port / dirs[k])) {
          const int fd = open(f.c_str(), O_RDONLY | O_CLOEXEC);
          if (fd < 0) continue;
          families[k].push_back({fd, std::string(kNames[k]) + "{device=\"" + dev.filename().string() +
                                         "\",port=\"" + port.filename().string() + "\",netdev=\"" + netdev +
                                         "\",counter=\"" + f.filename().string() + "\"} "});
        }
      }
    }
  }
  return families;
}

// One scrape's text: every series read with pread and written out.
void Render(const std::array<std::vector<Series>, 2>& families, std::string* text) {
  text->clear();
  for (int k = 0; k < 2; ++k) {
    *text += "# HELP ";
    *text += kNames[k];
    *text += " A counter file of the port.\n# TYPE ";
    *text += kNames[k];
    *text += " counter\n";
    for (const Series& s : families[k]) {
      char buf[32];
      const ssize_t n = pread(s.fd, buf, sizeof(buf), 0);
      if (n <= 0) continue;
      unsigned long long v = 0;
      std::from_chars(buf, buf + n, v);
      *text += s.head;
      char num[24];
      auto [end, ec] = std::to_chars(num, num + sizeof(num), v);
      text->append(num, end);
      text->push_back('\n');
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Args> args = ParseArgs(argc, argv);
  if (!args) return 2;
  const std::array<std::vector<Series>, 2> families = OpenSeries(args->root);
  const int level = args->level;
  roced::util::GzipEncoder gzip(level == 0 ? 1 : level);
  std::string text, wire;
  std::vector<double> ms;
  size_t series = families[0].size() + families[1].size();
  char line[64];
  for (int it = 0; args->from_stdin || it < args->iterations; ++it) {
    if (args->from_stdin && std::fgets(line, sizeof(line), stdin) == nullptr) return 0;
    const auto t0 = std::chrono::steady_clock::now();
    Render(families, &text);
    if (level > 0) {
      if (!gzip.Compress(text, &wire).ok()) return 1;
    }
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (args->from_stdin) {
      std::printf("{\"ms\": %.4f, \"series\": %zu, \"text_bytes\": %zu, \"wire_bytes\": %zu}\n",
                  ms.back(), series, text.size(), level > 0 ? wire.size() : text.size());
      std::fflush(stdout);
    }
  }
  std::sort(ms.begin(), ms.end());
  std::printf("{\"median_ms\": %.4f, \"p90_ms\": %.4f, \"series\": %zu, \"text_bytes\": %zu, "
              "\"wire_bytes\": %zu, \"gzip_level\": %d}\n",
              ms[ms.size() / 2], ms[ms.size() * 9 / 10], series, text.size(),
              level > 0 ? wire.size() : text.size(), level);
  return 0;
}

// Cross-checks the shipped deployment files against the binary: every flag
// the DaemonSet and the systemd unit pass exists, ports and paths agree with
// the flags' defaults, and both grant the same capabilities.
#include <yaml-cpp/yaml.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/flags.h"
#include "model/config_yaml.h"
#include "model/validate.h"
#include "util/fs.h"

namespace roced {
namespace {

std::string Src(const std::string& rel) { return std::string(ROCED_SOURCE_DIR) + "/" + rel; }

struct Manifest {
  YAML::Node daemonset;
  YAML::Node configmap;
};

Manifest LoadManifest() {
  Manifest m;
  for (const YAML::Node& doc : YAML::LoadAllFromFile(Src("deploy/kubernetes/daemonset.yaml"))) {
    std::string kind = doc["kind"].as<std::string>();
    if (kind == "DaemonSet") m.daemonset = doc;
    if (kind == "ConfigMap") m.configmap = doc;
  }
  return m;
}

// "--name=value" args -> map.
std::map<std::string, std::string> ArgMap(const YAML::Node& args) {
  std::map<std::string, std::string> out;
  for (const auto& a : args) {
    std::string s = a.as<std::string>();
    EXPECT_TRUE(absl::StartsWith(s, "--")) << s;
    std::pair<std::string, std::string> kv = absl::StrSplit(s.substr(2), absl::MaxSplits('=', 1));
    out[kv.first] = kv.second;
  }
  return out;
}

int PortOf(const std::string& listen) {
  int port = 0;
  EXPECT_TRUE(absl::SimpleAtoi(listen.substr(listen.rfind(':') + 1), &port)) << listen;
  return port;
}

std::set<std::string> KnownFlags() {
  agent::Flags flags;
  util::ArgParser parser;
  agent::RegisterFlags(&flags, &parser);
  auto names = parser.FlagNames();
  return {names.begin(), names.end()};
}

TEST(DaemonSet, PassesOnlyFlagsRocedKnows) {
  Manifest m = LoadManifest();
  ASSERT_TRUE(m.daemonset) << "no DaemonSet document";
  const YAML::Node c = m.daemonset["spec"]["template"]["spec"]["containers"][0];
  std::set<std::string> known = KnownFlags();
  for (const auto& [flag, value] : ArgMap(c["args"])) {
    EXPECT_TRUE(known.count(flag)) << "--" << flag << " is not a roced flag";
  }
}

TEST(DaemonSet, PortsMatchFlagsAndDefaults) {
  Manifest m = LoadManifest();
  const YAML::Node spec = m.daemonset["spec"]["template"]["spec"];
  const YAML::Node c = spec["containers"][0];
  auto args = ArgMap(c["args"]);
  std::map<std::string, int> ports;
  for (const auto& p : c["ports"]) ports[p["name"].as<std::string>()] = p["containerPort"].as<int>();
  agent::Flags defaults;
  EXPECT_EQ(ports["grpc"], PortOf(args["grpc-listen"]));
  EXPECT_EQ(ports["metrics"], PortOf(args["metrics-listen"]));
  EXPECT_EQ(ports["grpc"], PortOf(defaults.grpc_listen));
  EXPECT_EQ(ports["metrics"], PortOf(defaults.metrics_listen));
  EXPECT_EQ(m.daemonset["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"].as<std::string>(),
            std::to_string(ports["metrics"]));
  EXPECT_TRUE(spec["hostNetwork"].as<bool>());
  EXPECT_EQ(c["readinessProbe"]["grpc"]["port"].as<int>(), ports["grpc"]);
}

TEST(DaemonSet, MountsWhatTheAgentUses) {
  Manifest m = LoadManifest();
  const YAML::Node c = m.daemonset["spec"]["template"]["spec"]["containers"][0];
  auto args = ArgMap(c["args"]);
  std::map<std::string, std::string> mounts;
  for (const auto& v : c["volumeMounts"]) {
    mounts[v["mountPath"].as<std::string>()] = v["name"].as<std::string>();
  }
  EXPECT_TRUE(mounts.count("/sys"));
  EXPECT_TRUE(mounts.count("/dev/infiniband"));
  EXPECT_TRUE(mounts.count(args["state-dir"])) << args["state-dir"];
  std::string socket_dir = args["socket"].substr(0, args["socket"].rfind('/'));
  EXPECT_TRUE(mounts.count(socket_dir)) << socket_dir;
  std::string config_dir = args["config"].substr(0, args["config"].rfind('/'));
  std::string config_file = args["config"].substr(args["config"].rfind('/') + 1);
  ASSERT_TRUE(mounts.count(config_dir));
  // The ConfigMap carries the file the flag names, and it is a valid config.
  ASSERT_TRUE(m.configmap["data"][config_file]) << config_file;
  const std::string text = m.configmap["data"][config_file].as<std::string>();
  // Decoded and validated exactly as the agent loads a file: unknown keys,
  // wrong types and values out of range fail here, not on the cluster.
  std::vector<roced::v1::ValidationIssue> issues;
  auto decoded = model::DecodeYamlConfig(text, &issues);
  ASSERT_TRUE(decoded.ok()) << model::FormatIssues("configmap " + config_file, issues);
  model::ValidateConfig(decoded->config, &decoded->positions, &issues);
  EXPECT_FALSE(model::HasErrors(issues)) << model::FormatIssues("configmap " + config_file, issues);
  EXPECT_EQ(decoded->config.api_version(), "roced/v1");
}

// The check above is not a formality: the same path rejects a ConfigMap
// with a typo'd key or a value out of range.
TEST(DaemonSet, ConfigMapCheckRejectsABadConfig) {
  for (const char* bad : {"apiVersion: roced/v1\nkind: NodeConfig\nmdoe: enforce\n",
                          "apiVersion: roced/v1\nkind: NodeConfig\ninterfaces:\n"
                          "  - match: {netdev: eth0}\n    qos: {pfc: {priorities: [9]}}\n"}) {
    std::vector<roced::v1::ValidationIssue> issues;
    auto decoded = model::DecodeYamlConfig(bad, &issues);
    if (decoded.ok()) model::ValidateConfig(decoded->config, &decoded->positions, &issues);
    EXPECT_TRUE(!decoded.ok() || model::HasErrors(issues)) << bad;
  }
}

std::map<std::string, std::vector<std::string>> ParseUnit(const std::string& text) {
  std::map<std::string, std::vector<std::string>> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#' || line[0] == '[') continue;
    size_t eq = line.find('=');
    if (eq == absl::string_view::npos) continue;
    out[std::string(line.substr(0, eq))].push_back(std::string(line.substr(eq + 1)));
  }
  return out;
}

TEST(SystemdUnit, IsNotifyWithWatchdogMemlockAndKnownFlags) {
  auto text = util::ReadFile(Src("systemd/roced.service"));
  ASSERT_TRUE(text.ok());
  auto unit = ParseUnit(*text);
  EXPECT_EQ(unit["Type"].at(0), "notify");
  ASSERT_FALSE(unit["WatchdogSec"].empty());
  EXPECT_EQ(unit["LimitMEMLOCK"].at(0), "infinity");
  EXPECT_EQ(unit["ProtectSystem"].at(0), "strict");
  std::set<std::string> known = KnownFlags();
  for (absl::string_view word : absl::StrSplit(unit["ExecStart"].at(0), ' ', absl::SkipEmpty())) {
    if (!absl::StartsWith(word, "--")) continue;
    std::string flag(word.substr(2, word.find('=') == absl::string_view::npos ? absl::string_view::npos
                                                                              : word.find('=') - 2));
    EXPECT_TRUE(known.count(flag)) << "--" << flag;
  }
}

TEST(SystemdUnit, GrantsTheSameCapabilitiesAsTheDaemonSet) {
  auto text = util::ReadFile(Src("systemd/roced.service"));
  ASSERT_TRUE(text.ok());
  auto unit = ParseUnit(*text);
  std::set<std::string> systemd_caps;
  for (absl::string_view c : absl::StrSplit(unit["CapabilityBoundingSet"].at(0), ' ', absl::SkipEmpty())) {
    systemd_caps.insert(std::string(absl::StripPrefix(c, "CAP_")));
  }
  Manifest m = LoadManifest();
  const YAML::Node sc = m.daemonset["spec"]["template"]["spec"]["containers"][0]["securityContext"];
  std::set<std::string> k8s_caps;
  for (const auto& c : sc["capabilities"]["add"]) k8s_caps.insert(c.as<std::string>());
  EXPECT_EQ(systemd_caps, k8s_caps);
  EXPECT_FALSE(sc["privileged"].as<bool>());
}

}  // namespace
}  // namespace roced

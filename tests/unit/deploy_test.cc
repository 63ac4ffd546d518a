// Cross-checks the shipped deployment files against the binary: every flag
// the DaemonSet and the systemd unit pass exists, ports and paths agree with
// the flags' defaults, both serve gRPC on TCP with mutual TLS and an access
// policy whose files are where the flags say, the policy gives the node
// certificate the peer role, the hardening (seccomp, no service account
// token, only the /sys subtrees the agent uses, mbind allowed) is in place,
// the probes work without TLS, and both grant the same capabilities.
#include <yaml-cpp/yaml.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "access/policy.h"
#include "agent/flags.h"
#include "agent/serve/tcp_listener.h"
#include "hal/paths.h"
#include "model/config_yaml.h"
#include "model/defaults.h"
#include "model/validate.h"
#include "tools/rocectl/commands.h"
#include "util/fs.h"

namespace roced {
namespace {

std::string Src(const std::string& rel) { return std::string(ROCED_SOURCE_DIR) + "/" + rel; }

struct Manifest {
  YAML::Node daemonset;
  YAML::Node configmap;
  YAML::Node certificate;  // deploy/kubernetes/certificate.yaml
};

Manifest LoadManifest() {
  Manifest m;
  for (const YAML::Node& doc : YAML::LoadAllFromFile(Src("deploy/kubernetes/daemonset.yaml"))) {
    std::string kind = doc["kind"].as<std::string>();
    if (kind == "DaemonSet") m.daemonset = doc;
    if (kind == "ConfigMap") m.configmap = doc;
  }
  for (const YAML::Node& doc : YAML::LoadAllFromFile(Src("deploy/kubernetes/certificate.yaml"))) {
    if (doc["kind"].as<std::string>() == "Certificate") m.certificate = doc;
  }
  return m;
}

YAML::Node PodSpec(const Manifest& m) { return m.daemonset["spec"]["template"]["spec"]; }
YAML::Node Container(const Manifest& m) { return PodSpec(m)["containers"][0]; }

struct Mount {
  std::string volume;
  bool read_only = false;
};

// mountPath -> mount.
std::map<std::string, Mount> Mounts(const YAML::Node& container) {
  std::map<std::string, Mount> out;
  for (const auto& v : container["volumeMounts"]) {
    out[v["mountPath"].as<std::string>()] = {v["name"].as<std::string>(),
                                             v["readOnly"] && v["readOnly"].as<bool>()};
  }
  return out;
}

YAML::Node Volume(const Manifest& m, const std::string& name) {
  for (const auto& v : PodSpec(m)["volumes"]) {
    if (v["name"].as<std::string>() == name) return v;
  }
  return YAML::Node();
}

std::string Dir(const std::string& path) { return path.substr(0, path.rfind('/')); }
std::string Base(const std::string& path) { return path.substr(path.rfind('/') + 1); }

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
}

TEST(DaemonSet, MountsWhatTheAgentUses) {
  Manifest m = LoadManifest();
  const YAML::Node c = m.daemonset["spec"]["template"]["spec"]["containers"][0];
  auto args = ArgMap(c["args"]);
  std::map<std::string, std::string> mounts;
  for (const auto& v : c["volumeMounts"]) {
    mounts[v["mountPath"].as<std::string>()] = v["name"].as<std::string>();
  }
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

// The kernel subtrees the agent reads and writes (lib/hal, with the default
// roots the shipped files run with), whether it writes there, and what the
// DaemonSet mounts for it: the subtree itself, or, for one that exists only
// while a driver is loaded, the file system's root. A hostPath that is
// missing makes the runtime mkdir it, which debugfs refuses, and the pod
// would not start on a node without the driver. The unit names the subtree
// itself ('-': skipped when absent).
struct KernelTree {
  std::string path;
  bool written;
  std::string k8s_mount;
};

std::vector<KernelTree> AgentKernelTrees() {
  const hal::Paths paths;
  return {
      {paths.sysfs + "/class/infiniband", false, paths.sysfs + "/class/infiniband"},  // discovery, counters
      {paths.sysfs + "/class/infiniband_verbs", false, paths.sysfs + "/class/infiniband_verbs"},  // libibverbs
      {paths.sysfs + "/class/net", false, paths.sysfs + "/class/net"},  // netdevs (links into devices/)
      // What the class links point to; ECN enables and per-node hugepage pools.
      {paths.sysfs + "/devices", true, paths.sysfs + "/devices"},
      {paths.sysfs + "/kernel/mm/hugepages", true, paths.sysfs + "/kernel/mm/hugepages"},  // node-wide pools
      {paths.configfs, true, paths.configfs},  // rdma_cm (even reads mkdir)
      // Upstream mlx5's DCQCN parameters (hal/congestion_files: <pci>/cc_params/).
      {paths.debugfs + "/mlx5", true, paths.debugfs},
  };
}

TEST(DaemonSet, MountsOnlyTheSysfsSubtreesTheAgentUses) {
  Manifest m = LoadManifest();
  auto args = ArgMap(Container(m)["args"]);
  for (const char* root : {"sysfs-root", "configfs-root", "debugfs-root", "procfs-root"}) {
    EXPECT_FALSE(args.count(root)) << "--" << root << ": the trees below assume the defaults";
  }
  auto mounts = Mounts(Container(m));
  std::set<std::string> wanted;
  for (const KernelTree& tree : AgentKernelTrees()) {
    SCOPED_TRACE(tree.path);
    wanted.insert(tree.k8s_mount);
    ASSERT_TRUE(absl::StartsWith(tree.path, tree.k8s_mount));
    ASSERT_TRUE(mounts.count(tree.k8s_mount)) << tree.k8s_mount << " is not mounted";
    const Mount& mount = mounts[tree.k8s_mount];
    if (tree.written) {
      EXPECT_FALSE(mount.read_only) << tree.path << " is written by the agent";
    }
    const YAML::Node volume = Volume(m, mount.volume);
    ASSERT_TRUE(volume["hostPath"]) << tree.path;
    EXPECT_EQ(volume["hostPath"]["path"].as<std::string>(), tree.k8s_mount) << "the host's own " << tree.k8s_mount;
    // A hostPath the node may lack would be created by the runtime (or stop the pod).
    EXPECT_EQ(volume["hostPath"]["type"].as<std::string>(), "Directory");
  }
  // Nothing else of /sys: not all of it.
  for (const auto& [path, mount] : mounts) {
    if (path == "/sys" || absl::StartsWith(path, "/sys/")) {
      EXPECT_TRUE(wanted.count(path)) << path << " is mounted but the agent does not use it";
    }
    EXPECT_NE(path, "/") << "the host's root";
  }
  // debugfs: upstream mlx5's DCQCN parameters, read and written there.
  ASSERT_TRUE(mounts.count(hal::Paths().debugfs));
  EXPECT_FALSE(mounts[hal::Paths().debugfs].read_only);
}

// The file a flag names is in a mounted volume that carries it, read-only.
void ExpectFileInVolume(const Manifest& m, const std::string& flag, const std::string& path) {
  SCOPED_TRACE("--" + flag + "=" + path);
  auto mounts = Mounts(Container(m));
  ASSERT_TRUE(mounts.count(Dir(path))) << "nothing is mounted at " << Dir(path);
  const Mount& mount = mounts[Dir(path)];
  EXPECT_TRUE(mount.read_only);
  const YAML::Node volume = Volume(m, mount.volume);
  if (volume["configMap"]) {
    EXPECT_EQ(volume["configMap"]["name"].as<std::string>(), m.configmap["metadata"]["name"].as<std::string>());
    EXPECT_TRUE(m.configmap["data"][Base(path)]) << "the ConfigMap has no " << Base(path);
  } else if (volume["secret"]) {
    // The Secret certificate.yaml has cert-manager write: tls.crt, tls.key
    // and (a CA issuer's) ca.crt.
    ASSERT_TRUE(m.certificate);
    EXPECT_EQ(volume["secret"]["secretName"].as<std::string>(),
              m.certificate["spec"]["secretName"].as<std::string>());
    EXPECT_FALSE(volume["secret"]["items"]) << "items would rename the keys";
    EXPECT_THAT(Base(path), testing::AnyOf("tls.crt", "tls.key", "ca.crt"));
  } else {
    ADD_FAILURE() << "volume " << mount.volume << " is neither the ConfigMap nor the TLS Secret";
  }
}

TEST(DaemonSet, ServesGrpcWithMutualTlsAndAnAccessFileFromItsVolumes) {
  Manifest m = LoadManifest();
  auto args = ArgMap(Container(m)["args"]);
  ASSERT_FALSE(args["grpc-listen"].empty());
  for (const char* flag : {"insecure", "insecure-allow-remote", "grpc-reflection"}) {
    EXPECT_FALSE(args.count(flag)) << "--" << flag;
  }
  for (const char* flag : {"tls-cert", "tls-key", "tls-client-ca", "access-file"}) {
    ASSERT_FALSE(args[flag].empty()) << "--" << flag << " is not passed";
    ExpectFileInVolume(m, flag, args[flag]);
  }
  // A Secret volume is updated in place on renewal; a subPath mount would not be.
  for (const auto& v : Container(m)["volumeMounts"]) {
    EXPECT_FALSE(v["subPath"]) << v["name"].as<std::string>();
  }
}

void ExpectSamePolicy(const access::AccessPolicy& a, const access::AccessPolicy& b) {
  ASSERT_EQ(a.identities.size(), b.identities.size());
  for (size_t i = 0; i < a.identities.size(); ++i) {
    EXPECT_EQ(a.identities[i].match, b.identities[i].match);
    EXPECT_EQ(a.identities[i].roles.ToString(), b.identities[i].roles.ToString()) << a.identities[i].match;
  }
  EXPECT_EQ(a.socket_group.ToString(), b.socket_group.ToString());
  EXPECT_EQ(a.socket_other.ToString(), b.socket_other.ToString());
  EXPECT_EQ(a.insecure.ToString(), b.insecure.ToString());
}

TEST(AccessPolicyExample, GrantsControllerAdminOnCallOperatorNodesPeerAndNobodyElseAnything) {
  auto policy = access::LoadAccessPolicy(Src("deploy/examples/access.yaml"));
  ASSERT_TRUE(policy.ok()) << policy.status();
  using access::Role;
  const access::RoleSet controller = policy->ForCertificate({"spiffe://rdma.example.net/fleet-controller"});
  EXPECT_TRUE(controller.Has(Role::kAdmin));
  const access::RoleSet oncall = policy->ForCertificate({"spiffe://rdma.example.net/oncall/alice"});
  EXPECT_TRUE(oncall.Has(Role::kOperator));
  EXPECT_FALSE(oncall.Has(Role::kAdmin));
  // A node's certificate sets up probes and nothing else: a node taken over
  // cannot push configs to the others.
  const access::RoleSet node = policy->ForCertificate({"node7.nodes.rdma.example.net"});
  EXPECT_EQ(node.ToString(), "peer");
  EXPECT_TRUE(policy->ForCertificate({"someone.example.com"}).empty());
  EXPECT_TRUE(policy->insecure.empty());
  EXPECT_TRUE(policy->socket_other.empty());
  EXPECT_TRUE(policy->socket_group.Has(Role::kViewer)) << "the probes run rocectl as root on the socket";
}

TEST(DaemonSet, ConfigMapPolicyIsTheExampleAndGivesTheNodeCertificatePeer) {
  Manifest m = LoadManifest();
  auto args = ArgMap(Container(m)["args"]);
  const YAML::Node text = m.configmap["data"][Base(args["access-file"])];
  ASSERT_TRUE(text);
  auto shipped = access::ParseAccessPolicy(text.as<std::string>());
  ASSERT_TRUE(shipped.ok()) << shipped.status();
  auto example = access::LoadAccessPolicy(Src("deploy/examples/access.yaml"));
  ASSERT_TRUE(example.ok()) << example.status();
  ExpectSamePolicy(*shipped, *example);

  // Agents call each other with their --tls-cert: the certificate
  // certificate.yaml issues must be a peer (and no more), and serve as
  // server and client.
  ASSERT_TRUE(m.certificate);
  const YAML::Node spec = m.certificate["spec"];
  std::vector<std::string> ids;
  for (const auto& n : spec["dnsNames"]) ids.push_back(n.as<std::string>());
  if (spec["commonName"]) ids.push_back(spec["commonName"].as<std::string>());
  for (const auto& n : spec["uris"]) ids.push_back(n.as<std::string>());
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(shipped->ForCertificate(ids).ToString(), "peer");
  std::set<std::string> usages;
  for (const auto& u : spec["usages"]) usages.insert(u.as<std::string>());
  EXPECT_TRUE(usages.count("server auth"));
  EXPECT_TRUE(usages.count("client auth"));
}

TEST(DaemonSet, IsHardened) {
  Manifest m = LoadManifest();
  const YAML::Node spec = PodSpec(m);
  const YAML::Node sc = Container(m)["securityContext"];
  ASSERT_TRUE(spec["automountServiceAccountToken"]);
  EXPECT_FALSE(spec["automountServiceAccountToken"].as<bool>());
  // The container's seccompProfile, else the pod's.
  YAML::Node seccomp = sc["seccompProfile"] ? sc["seccompProfile"] : spec["securityContext"]["seccompProfile"];
  ASSERT_TRUE(seccomp) << "no seccompProfile";
  EXPECT_EQ(seccomp["type"].as<std::string>(), "RuntimeDefault");
  EXPECT_FALSE(sc["privileged"].as<bool>());
  EXPECT_FALSE(sc["allowPrivilegeEscalation"].as<bool>());
  EXPECT_TRUE(sc["readOnlyRootFilesystem"].as<bool>());
  std::vector<std::string> drop;
  for (const auto& c : sc["capabilities"]["drop"]) drop.push_back(c.as<std::string>());
  EXPECT_THAT(drop, testing::ElementsAre("ALL"));
  // containerd's and Docker's RuntimeDefault allow mbind(2) only with
  // CAP_SYS_NICE: without it probe buffers lose their NUMA placement.
  std::set<std::string> add;
  for (const auto& c : sc["capabilities"]["add"]) add.insert(c.as<std::string>());
  EXPECT_TRUE(add.count("SYS_NICE")) << "RuntimeDefault blocks mbind without SYS_NICE";
  EXPECT_FALSE(spec["hostPID"] && spec["hostPID"].as<bool>());
  EXPECT_FALSE(spec["hostIPC"] && spec["hostIPC"].as<bool>());
}

// kubelet cannot present a client certificate, so the probes run rocectl
// in the container against the unix socket.
TEST(DaemonSet, ProbesAskTheAgentOverTheUnixSocket) {
  Manifest m = LoadManifest();
  const YAML::Node c = Container(m);
  auto args = ArgMap(c["args"]);
  for (const char* which : {"readinessProbe", "livenessProbe"}) {
    SCOPED_TRACE(which);
    const YAML::Node probe = c[which];
    ASSERT_TRUE(probe);
    // kubelet's grpc probe is plaintext and cannot present a certificate;
    // tcpSocket would pass with the agent wedged; httpGet breaks with
    // --web.config.file.
    EXPECT_FALSE(probe["grpc"] || probe["tcpSocket"] || probe["httpGet"]);
    ASSERT_TRUE(probe["exec"]);
    std::vector<std::string> command;
    for (const auto& w : probe["exec"]["command"]) command.push_back(w.as<std::string>());
    ASSERT_GE(command.size(), 2u);
    EXPECT_EQ(command.front(), "/usr/bin/rocectl");
    std::map<std::string, std::string> flags;
    for (size_t i = 1; i + 1 < command.size(); ++i) {
      ASSERT_TRUE(absl::StartsWith(command[i], "--")) << command[i];
      std::pair<std::string, std::string> kv = absl::StrSplit(command[i].substr(2), absl::MaxSplits('=', 1));
      flags[kv.first] = kv.second;
    }
    EXPECT_EQ(flags["socket"], args["socket"]) << "the probe must use the agent's --socket";
    EXPECT_FALSE(flags.count("target")) << "TCP would need a client certificate";
    const ctl::Command* cmd = ctl::FindCommand(command.back());
    ASSERT_NE(cmd, nullptr) << command.back() << " is not a rocectl command";
    EXPECT_TRUE(cmd->needs_agent) << command.back() << " does not ask the agent";
    // Readiness by the rule of /readyz (devices, state dir, converged,
    // nothing provisional); liveness only that the agent answers.
    EXPECT_EQ(command.back(), std::string(which) == "readinessProbe" ? "ready" : "version");
    // The probe's deadline is above rocectl's own.
    absl::Duration timeout;
    ASSERT_TRUE(absl::ParseDuration(flags["timeout"], &timeout)) << flags["timeout"];
    ASSERT_TRUE(probe["timeoutSeconds"]);
    EXPECT_LT(timeout, absl::Seconds(probe["timeoutSeconds"].as<int>()));
  }
}

// A rolling update moves on only from nodes that stayed ready (rocectl
// ready: converged, nothing provisional) for at least one mesh window, so
// the node has been probed by its peers with the new agent before the next
// batch is taken.
TEST(DaemonSet, ARollingUpdateWaitsAMeshWindowOnEachReadyNode) {
  Manifest m = LoadManifest();
  const YAML::Node spec = m.daemonset["spec"];
  ASSERT_TRUE(spec["minReadySeconds"]);
  EXPECT_GE(spec["minReadySeconds"].as<int>(), 60) << "the mesh's window is 60 s";
  ASSERT_TRUE(spec["updateStrategy"]["rollingUpdate"]["maxUnavailable"]);
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

std::map<std::string, std::vector<std::string>> LoadUnit() {
  auto text = util::ReadFile(Src("systemd/roced.service"));
  EXPECT_TRUE(text.ok()) << text.status();
  return ParseUnit(text.ok() ? *text : "");
}

// systemd/roced.env, the unit's EnvironmentFile as the package installs it:
// VAR=value lines, the value's surrounding quotes dropped. With `enabled`,
// also the settings it ships commented out (#VAR=value: TLS and the access
// file, whose files a fresh node lacks), as a site that has put the files
// in place enables them.
enum class EnvLines { kAsShipped, kEnabled };
std::map<std::string, std::string> LoadEnvFile(EnvLines which = EnvLines::kAsShipped) {
  auto text = util::ReadFile(Src("systemd/roced.env"));
  EXPECT_TRUE(text.ok()) << text.status();
  std::map<std::string, std::string> env;
  for (absl::string_view line : absl::StrSplit(text.ok() ? *text : "", '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (which == EnvLines::kEnabled && absl::StartsWith(line, "#ROCED_")) line.remove_prefix(1);
    if (line.empty() || line[0] == '#') continue;
    size_t eq = line.find('=');
    if (eq == absl::string_view::npos) continue;
    absl::string_view value = line.substr(eq + 1);
    if (value.size() >= 2 && (value[0] == '"' || value[0] == '\'') && value.back() == value[0]) {
      value = value.substr(1, value.size() - 2);
    }
    env[std::string(line.substr(0, eq))] = std::string(value);
  }
  return env;
}

std::string VarName(absl::string_view word) {
  return std::string(absl::StripSuffix(absl::StripPrefix(absl::StripPrefix(word, "$"), "{"), "}"));
}

// ExecStart's words with $VAR and ${VAR} replaced as systemd does for an
// unquoted $VAR: split at whitespace, nothing when empty or unset.
std::vector<std::string> ExecStartWords(const std::string& exec_start, const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  for (absl::string_view word : absl::StrSplit(exec_start, ' ', absl::SkipEmpty())) {
    if (absl::StartsWith(word, "$")) {
      auto it = env.find(VarName(word));
      if (it == env.end()) continue;
      for (absl::string_view w : absl::StrSplit(it->second, absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
        out.emplace_back(w);
      }
      continue;
    }
    out.emplace_back(word);
  }
  return out;
}

// "--flag value" / "--flag=value" -> map ("" for a flag followed by another).
std::map<std::string, std::string> FlagValues(const std::vector<std::string>& words) {
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (!absl::StartsWith(words[i], "--")) continue;
    const size_t eq = words[i].find('=');
    if (eq != std::string::npos) {
      out[words[i].substr(2, eq - 2)] = words[i].substr(eq + 1);
    } else if (i + 1 < words.size() && !absl::StartsWith(words[i + 1], "--")) {
      out[words[i].substr(2)] = words[i + 1];
    } else {
      out[words[i].substr(2)] = "";
    }
  }
  return out;
}

TEST(SystemdUnit, IsNotifyWithWatchdogMemlockAndKnownFlags) {
  auto unit = LoadUnit();
  EXPECT_EQ(unit["Type"].at(0), "notify");
  ASSERT_FALSE(unit["WatchdogSec"].empty());
  EXPECT_EQ(unit["LimitMEMLOCK"].at(0), "infinity");
  // Enough descriptors for the gRPC listener's full connection cap (a
  // quarter of the limit) beside the counter files' half.
  ASSERT_FALSE(unit["LimitNOFILE"].empty());
  EXPECT_GE(std::stoi(unit["LimitNOFILE"].at(0)), 4 * agent::kMaxTcpConnections);
  EXPECT_EQ(unit["ProtectSystem"].at(0), "strict");
  std::set<std::string> known = KnownFlags();
  // The flags the unit passes itself and those the env file adds, as
  // shipped and with its commented settings enabled.
  for (EnvLines which : {EnvLines::kAsShipped, EnvLines::kEnabled}) {
    for (const auto& [flag, value] : FlagValues(ExecStartWords(unit["ExecStart"].at(0), LoadEnvFile(which)))) {
      EXPECT_TRUE(known.count(flag)) << "--" << flag;
    }
  }
}

// As installed, the env file names no file a fresh node lacks (roced stops
// at start-up when a TLS or access file is missing, and Restart= would
// loop): TCP stays closed, the unix socket and /metrics serve, and the
// config is the default one the package installs.
TEST(SystemdUnit, StartsAsInstalledWithNoFileTheNodeLacks) {
  auto unit = LoadUnit();
  const std::string exec_start = unit["ExecStart"].at(0);
  const std::map<std::string, std::string> env = LoadEnvFile(EnvLines::kAsShipped);
  auto flags = FlagValues(ExecStartWords(exec_start, env));
  for (const char* flag : {"tls-cert", "tls-key", "tls-client-ca", "access-file", "grpc-listen", "insecure",
                           "insecure-allow-remote", "web.config.file"}) {
    EXPECT_FALSE(flags.count(flag)) << "--" << flag << " as shipped";
  }
  EXPECT_EQ(flags["config"], model::defaults::kConfigPath);
  // Every $VAR the unit expands is in the file, set or to be enabled.
  const std::map<std::string, std::string> enabled = LoadEnvFile(EnvLines::kEnabled);
  for (absl::string_view word : absl::StrSplit(exec_start, ' ', absl::SkipEmpty())) {
    if (absl::StartsWith(word, "$")) {
      EXPECT_TRUE(enabled.count(VarName(word))) << "ExecStart uses " << word << " but roced.env does not mention it";
    }
  }
}

TEST(SystemdUnit, ServesGrpcWithMutualTlsAndAnAccessFileFromTheEnvFile) {
  auto unit = LoadUnit();
  ASSERT_EQ(unit["EnvironmentFile"].size(), 1u);
  EXPECT_EQ(std::string(absl::StripPrefix(unit["EnvironmentFile"][0], "-")), "/etc/roced/roced.env");
  const std::string exec_start = unit["ExecStart"].at(0);
  for (const char* var : {"$ROCED_TLS", "$ROCED_ACCESS", "$ROCED_ARGS"}) {
    EXPECT_TRUE(absl::StrContains(exec_start, var)) << var;
  }
  // Once the site enables the TLS and access lines.
  auto flags = FlagValues(ExecStartWords(exec_start, LoadEnvFile(EnvLines::kEnabled)));
  for (const char* flag : {"insecure", "insecure-allow-remote", "grpc-reflection"}) {
    EXPECT_FALSE(flags.count(flag)) << "--" << flag;
  }
  // Every file under the unit's ConfigurationDirectory (/etc/roced).
  ASSERT_FALSE(unit["ConfigurationDirectory"].empty());
  const std::string etc = "/etc/" + unit["ConfigurationDirectory"].at(0) + "/";
  for (const char* flag : {"tls-cert", "tls-key", "tls-client-ca", "access-file", "config"}) {
    ASSERT_FALSE(flags[flag].empty()) << "--" << flag << " is not passed";
    EXPECT_TRUE(absl::StartsWith(flags[flag], etc)) << "--" << flag << " " << flags[flag];
  }
  // The TLS files sit together, as the DaemonSet mounts them.
  EXPECT_EQ(Dir(flags["tls-cert"]), Dir(flags["tls-key"]));
  EXPECT_EQ(Dir(flags["tls-cert"]), Dir(flags["tls-client-ca"]));
}

// Groups of systemd 252's system-call filter holding mbind
// (`systemd-analyze syscall-filter GROUP`; @system-service holds
// @resources). tests/e2e/systemd_security.sh asks systemd itself.
bool NamesMbind(absl::string_view word) {
  word = word.substr(0, word.find(':'));  // ~name:errno
  return word == "mbind" || word == "@resources" || word == "@system-service" || word == "@known";
}

// Whether SystemCallFilter= lines, in order, let mbind(2) through, merged as
// systemd.exec(5) says: the first line sets the mode (an allow list, or a
// deny list when it starts with ~), each later line adds its calls to or
// removes them from the allowed set (the later line wins), and an empty
// assignment resets the filter.
bool MbindAllowed(const std::vector<std::string>& filters) {
  bool filtering = false;
  bool allowed = true;
  for (const std::string& line : filters) {
    if (line.empty()) {
      filtering = false;
      allowed = true;
      continue;
    }
    const bool deny = line[0] == '~';
    if (!filtering) {
      filtering = true;
      allowed = deny;  // an allow list starts empty, a deny list full
    }
    for (absl::string_view w : absl::StrSplit(absl::StripPrefix(line, "~"), ' ', absl::SkipEmpty())) {
      if (NamesMbind(w)) allowed = !deny;
    }
  }
  return allowed;
}

TEST(SystemdUnit, MbindCheckFollowsSystemdsMergeRules) {
  EXPECT_FALSE(MbindAllowed({"@system-service", "~@privileged @resources @obsolete"}));
  EXPECT_TRUE(MbindAllowed({"@system-service", "~@privileged @resources @obsolete", "mbind"}));
  EXPECT_FALSE(MbindAllowed({"@system-service", "mbind", "~@resources"})) << "the later line wins";
  EXPECT_FALSE(MbindAllowed({"~@resources:EPERM"}));
  EXPECT_TRUE(MbindAllowed({"~@resources", "mbind"}));
  EXPECT_TRUE(MbindAllowed({"@system-service", "~@resources", ""})) << "reset";
  EXPECT_FALSE(MbindAllowed({"@basic-io @network-io"}));
  EXPECT_TRUE(MbindAllowed({}));
}

// Probe buffers are bound to their NIC's NUMA node with mbind(2), which
// @resources holds; a filtered call fails with EPERM, which the agent only
// logs at debug level. The exception is mbind alone: nothing else denied is
// let back in.
TEST(SystemdUnit, SystemCallFilterAllowsMbindAndNothingElseOfTheDenyList) {
  auto unit = LoadUnit();
  const std::vector<std::string>& filters = unit["SystemCallFilter"];
  ASSERT_FALSE(filters.empty());
  EXPECT_TRUE(MbindAllowed(filters)) << "SystemCallFilter= blocks mbind";
  bool denied_resources = false;
  for (const std::string& line : filters) {
    if (absl::StartsWith(line, "~")) {
      for (absl::string_view w : absl::StrSplit(line.substr(1), ' ', absl::SkipEmpty())) {
        denied_resources = denied_resources || w.substr(0, w.find(':')) == "@resources";
      }
    } else if (denied_resources) {
      EXPECT_EQ(line, "mbind") << "an allow line after the deny list lets more than mbind back in";
    }
  }
  EXPECT_TRUE(denied_resources) << "the rest of @resources should stay denied";
}

// The unit may write only where the DaemonSet mounts read-write: the same
// kernel subtrees, from the same list of what the agent writes.
TEST(SystemdUnit, WritesOnlyTheSysfsSubtreesTheAgentWrites) {
  auto unit = LoadUnit();
  ASSERT_FALSE(unit["ProtectKernelTunables"].empty());
  EXPECT_EQ(unit["ProtectKernelTunables"].at(0), "yes");
  std::set<std::string> writable;
  for (const std::string& line : unit["ReadWritePaths"]) {
    for (absl::string_view p : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      p = absl::StripPrefix(p, "-");
      if (absl::StartsWith(p, "/sys")) writable.insert(std::string(p));
    }
  }
  std::set<std::string> written;
  std::set<std::string> written_k8s;
  for (const KernelTree& tree : AgentKernelTrees()) {
    if (tree.written) {
      written.insert(tree.path);
      written_k8s.insert(tree.k8s_mount);
    }
  }
  EXPECT_EQ(writable, written);
  EXPECT_TRUE(writable.count(hal::Paths().debugfs + "/mlx5")) << "upstream mlx5's DCQCN parameters";
  Manifest m = LoadManifest();
  std::set<std::string> k8s_writable;
  for (const auto& [path, mount] : Mounts(Container(m))) {
    if (absl::StartsWith(path, "/sys") && !mount.read_only) k8s_writable.insert(path);
  }
  EXPECT_EQ(k8s_writable, written_k8s);
}

// The same capabilities both ways, but for SYS_NICE: the DaemonSet holds it
// only because RuntimeDefault seccomp ties mbind to it (the kernel does not
// ask for it), and the unit's own filter allows mbind instead.
TEST(SystemdUnit, GrantsTheSameCapabilitiesAsTheDaemonSet) {
  auto unit = LoadUnit();
  std::set<std::string> systemd_caps;
  for (absl::string_view c : absl::StrSplit(unit["CapabilityBoundingSet"].at(0), ' ', absl::SkipEmpty())) {
    systemd_caps.insert(std::string(absl::StripPrefix(c, "CAP_")));
  }
  Manifest m = LoadManifest();
  const YAML::Node sc = Container(m)["securityContext"];
  std::set<std::string> k8s_caps;
  for (const auto& c : sc["capabilities"]["add"]) k8s_caps.insert(c.as<std::string>());
  k8s_caps.erase("SYS_NICE");
  EXPECT_EQ(systemd_caps, k8s_caps);
  EXPECT_FALSE(systemd_caps.count("SYS_NICE"));
  EXPECT_FALSE(sc["privileged"].as<bool>());
}

}  // namespace
}  // namespace roced

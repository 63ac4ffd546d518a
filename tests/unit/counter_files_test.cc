// CounterFiles on copies of the fixture sysfs tree, and, for the "device
// gone" path, on a real sysfs attribute that the kernel removes while the
// file is open.
#include "hal/counter_files.h"

#include <fcntl.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"

namespace roced::hal {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const std::string kFixture = std::string(ROCED_FIXTURES) + "/sysfs";

// A private copy of the fixture tree (symlinks kept as symlinks) that a
// test may change.
class TreeCopy {
 public:
  TreeCopy() {
    std::string tmpl = (fs::temp_directory_path() / "roced-cf-XXXXXX").string();
    root_ = mkdtemp(tmpl.data());
    fs::copy(kFixture, root_ + "/sysfs", fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }
  ~TreeCopy() { fs::remove_all(root_); }
  std::string sysfs() const { return root_ + "/sysfs"; }
  std::string CounterPath(const std::string& dev, const std::string& dir,
                          const std::string& name) const {
    return absl::StrCat(sysfs(), "/class/infiniband/", dev, "/ports/1/", dir, "/", name);
  }

 private:
  std::string root_;
};

CounterFiles::Options NoAutoRescan() {
  CounterFiles::Options o;
  o.rescan_interval = absl::InfiniteDuration();
  return o;
}

// (device, source) -> name -> value, for port 1.
std::map<std::string, std::map<std::string, uint64_t>> ByDir(
    const std::vector<PortCounterSet>& sets) {
  std::map<std::string, std::map<std::string, uint64_t>> out;
  for (const PortCounterSet& s : sets) {
    auto& m = out[absl::StrCat(s.device, "/", s.port, "/", CounterSourceName(s.source))];
    for (const CounterValue& v : s.values) m[v.name] = v.value;
  }
  return out;
}

void WriteInPlace(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  f << text;
}

TEST(CounterFilesTest, ReadsEveryFileOfEveryFixturePortNotAFixedList) {
  CounterFiles files(Paths{.sysfs = kFixture}, NoAutoRescan());
  auto dirs = ByDir(files.Read());
  std::vector<std::string> keys;
  for (const auto& [k, v] : dirs) keys.push_back(k);
  EXPECT_THAT(keys, ElementsAre("mlx5_0/1/counters", "mlx5_0/1/hw_counters", "mlx5_1/1/counters",
                                "mlx5_1/1/hw_counters", "mlx5_2/1/counters",
                                "mlx5_2/1/hw_counters", "rxe0/1/hw_counters"));
  EXPECT_EQ(dirs["mlx5_0/1/counters"].size(), 21u);
  EXPECT_EQ(dirs["mlx5_0/1/hw_counters"].size(), 25u);
  EXPECT_EQ(dirs["rxe0/1/hw_counters"].size(), 15u);
  EXPECT_EQ(dirs["mlx5_0/1/hw_counters"]["np_cnp_sent"], 101201u);
  EXPECT_EQ(dirs["mlx5_1/1/counters"]["port_xmit_data"], 200018446744u);
  // Names node_exporter's fixed list does not know are there too.
  EXPECT_EQ(dirs["mlx5_2/1/hw_counters"]["roce_slow_restart_trans"], 300026u);
  EXPECT_EQ(dirs["rxe0/1/hw_counters"]["completer_retry_err"], 6u);
}

TEST(CounterFilesTest, LifespanIsASettingAndIsNotRead) {
  CounterFiles files(Paths{.sysfs = kFixture}, NoAutoRescan());
  for (const auto& [dir, values] : ByDir(files.Read())) {
    EXPECT_EQ(values.count("lifespan"), 0u) << dir;
  }
}

TEST(CounterFilesTest, KeepsFilesOpenAndRereadsThemInPlace) {
  TreeCopy tree;
  CounterFiles files(Paths{.sysfs = tree.sysfs()}, NoAutoRescan());
  files.Read();
  const size_t open = files.open_files();
  EXPECT_EQ(open, 21u * 3 + 25u * 3 + 15u);

  WriteInPlace(tree.CounterPath("mlx5_0", "hw_counters", "np_cnp_sent"), "424242\n");
  // Replace another file by a new inode: the open descriptor still reads
  // the old one, which proves the read went through it, not a new open().
  const std::string replaced = tree.CounterPath("mlx5_0", "hw_counters", "rp_cnp_handled");
  fs::remove(replaced);
  WriteInPlace(replaced, "7\n");

  auto dirs = ByDir(files.Read());
  EXPECT_EQ(dirs["mlx5_0/1/hw_counters"]["np_cnp_sent"], 424242u);
  EXPECT_EQ(dirs["mlx5_0/1/hw_counters"]["rp_cnp_handled"], 101103u);
  EXPECT_EQ(files.open_files(), open);

  files.Rescan();  // a rescan keeps the descriptors of files still listed
  EXPECT_EQ(ByDir(files.Read())["mlx5_0/1/hw_counters"]["rp_cnp_handled"], 101103u);
}

// ReadInto gives what Read gives, in place while nothing changed (the
// names' storage is not reallocated), and follows every change Read does.
TEST(CounterFilesTest, ReadIntoRewritesValuesInPlaceAndFollowsChanges) {
  TreeCopy tree;
  CounterFiles files(Paths{.sysfs = tree.sysfs()}, NoAutoRescan());
  std::vector<PortCounterSet> sets;
  files.ReadInto(&sets);
  EXPECT_EQ(ByDir(sets), ByDir(files.Read()));
  ASSERT_FALSE(sets.empty());
  const CounterValue* first = &sets[0].values[0];
  const char* name_storage = sets[0].values[0].name.data();

  WriteInPlace(tree.CounterPath("mlx5_0", "hw_counters", "np_cnp_sent"), "424242\n");
  files.ReadInto(&sets);
  EXPECT_EQ(ByDir(sets)["mlx5_0/1/hw_counters"]["np_cnp_sent"], 424242u);
  EXPECT_EQ(&sets[0].values[0], first) << "rebuilt instead of rewritten in place";
  EXPECT_EQ(sets[0].values[0].name.data(), name_storage);

  // A file that does not read as a number: left out, as Read() does.
  const std::string bad = tree.CounterPath("mlx5_0", "hw_counters", "out_of_buffer");
  WriteInPlace(bad, "N/A\n");
  files.ReadInto(&sets);
  EXPECT_EQ(ByDir(sets), ByDir(files.Read()));
  EXPECT_EQ(ByDir(sets)["mlx5_0/1/hw_counters"].count("out_of_buffer"), 0u);
  WriteInPlace(bad, "17\n");
  files.ReadInto(&sets);
  EXPECT_EQ(ByDir(sets)["mlx5_0/1/hw_counters"]["out_of_buffer"], 17u);

  // A counter and a device gone at a rescan.
  fs::remove(tree.CounterPath("rxe0", "hw_counters", "send_err"));
  fs::remove(tree.sysfs() + "/class/infiniband/mlx5_1");
  files.Rescan();
  files.ReadInto(&sets);
  EXPECT_EQ(ByDir(sets), ByDir(files.Read()));
  EXPECT_EQ(ByDir(sets)["rxe0/1/hw_counters"].count("send_err"), 0u);
  EXPECT_EQ(ByDir(sets).count("mlx5_1/1/counters"), 0u);

  // What a caller left in the vector does not matter.
  std::vector<PortCounterSet> junk(3);
  junk[1].device = "mlx5_9";
  files.ReadInto(&junk);
  EXPECT_EQ(ByDir(junk), ByDir(files.Read()));
}

TEST(CounterFilesTest, DeviceThatDisappearsIsDroppedAndItsFilesClosed) {
  TreeCopy tree;
  CounterFiles files(Paths{.sysfs = tree.sysfs()}, NoAutoRescan());
  files.Read();
  const size_t before = files.open_files();
  fs::remove(tree.sysfs() + "/class/infiniband/mlx5_1");
  files.Rescan();
  auto dirs = ByDir(files.Read());
  EXPECT_EQ(dirs.count("mlx5_1/1/counters"), 0u);
  EXPECT_EQ(dirs.count("mlx5_1/1/hw_counters"), 0u);
  EXPECT_EQ(dirs.count("mlx5_0/1/counters"), 1u);
  EXPECT_EQ(files.open_files(), before - 21 - 25);
}

TEST(CounterFilesTest, DeviceThatAppearsIsReadAfterTheRescanInterval) {
  TreeCopy tree;
  const std::string link = tree.sysfs() + "/class/infiniband/rxe0";
  const fs::path target = fs::read_symlink(link);
  fs::remove(link);
  CounterFiles::Options always;
  always.rescan_interval = absl::ZeroDuration();
  CounterFiles files(Paths{.sysfs = tree.sysfs()}, always);
  EXPECT_EQ(ByDir(files.Read()).count("rxe0/1/hw_counters"), 0u);
  fs::create_symlink(target, link);
  EXPECT_EQ(ByDir(files.Read())["rxe0/1/hw_counters"]["rcvd_seq_err"], 11u);
}

TEST(CounterFilesTest, CounterFilesAddedOrRemovedAreFollowedAtRescan) {
  TreeCopy tree;
  CounterFiles files(Paths{.sysfs = tree.sysfs()}, NoAutoRescan());
  files.Read();
  WriteInPlace(tree.CounterPath("rxe0", "hw_counters", "new_counter"), "5\n");
  fs::remove(tree.CounterPath("rxe0", "hw_counters", "send_err"));
  EXPECT_EQ(ByDir(files.Read())["rxe0/1/hw_counters"].count("new_counter"), 0u);
  files.Rescan();
  auto rxe = ByDir(files.Read())["rxe0/1/hw_counters"];
  EXPECT_EQ(rxe["new_counter"], 5u);
  EXPECT_EQ(rxe.count("send_err"), 0u);
}

TEST(CounterFilesTest, TextThatIsNotANumberIsLeftOutOfThatReadOnly) {
  TreeCopy tree;
  CounterFiles files(Paths{.sysfs = tree.sysfs()}, NoAutoRescan());
  const std::string path = tree.CounterPath("mlx5_0", "hw_counters", "out_of_buffer");
  WriteInPlace(path, "N/A\n");
  auto hw = ByDir(files.Read())["mlx5_0/1/hw_counters"];
  EXPECT_EQ(hw.count("out_of_buffer"), 0u);
  EXPECT_EQ(hw.size(), 24u);
  WriteInPlace(path, "17\n");
  EXPECT_EQ(ByDir(files.Read())["mlx5_0/1/hw_counters"]["out_of_buffer"], 17u);
}

TEST(CounterFilesTest, FilesOverTheDescriptorBudgetAreStillRead) {
  CounterFiles::Options o = NoAutoRescan();
  o.max_open_files = 10;
  CounterFiles files(Paths{.sysfs = kFixture}, o);
  auto dirs = ByDir(files.Read());
  EXPECT_EQ(files.open_files(), 10u);
  EXPECT_EQ(dirs["rxe0/1/hw_counters"].size(), 15u);
  EXPECT_EQ(dirs["rxe0/1/hw_counters"]["rdma_recvs"], 20311u);
}

TEST(CounterFilesTest, NoInfinibandClassDirectoryMeansNoDevices) {
  std::string tmpl = (fs::temp_directory_path() / "roced-cf-empty-XXXXXX").string();
  std::string root = mkdtemp(tmpl.data());
  CounterFiles files(Paths{.sysfs = root}, NoAutoRescan());
  EXPECT_THAT(files.Read(), IsEmpty());
  fs::remove_all(root);
}

// The uncached one-port read (the probe engine's) sees what Read() sees for
// that port, and nothing of other ports or devices.
TEST(ReadPortCounterSetsTest, GivesOnePortsSetsAsReadDoes) {
  CounterFiles files(Paths{.sysfs = kFixture}, NoAutoRescan());
  auto all = ByDir(files.Read());
  auto one = ByDir(ReadPortCounterSets(Paths{.sysfs = kFixture}, "mlx5_0", 1));
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one["mlx5_0/1/counters"], all["mlx5_0/1/counters"]);
  EXPECT_EQ(one["mlx5_0/1/hw_counters"], all["mlx5_0/1/hw_counters"]);
  EXPECT_EQ(one["mlx5_0/1/hw_counters"].count("lifespan"), 0u);
  // rxe has no counters/: no set for it, not an empty one.
  auto rxe = ReadPortCounterSets(Paths{.sysfs = kFixture}, "rxe0", 1);
  ASSERT_EQ(rxe.size(), 1u);
  EXPECT_EQ(rxe[0].source, CounterSource::kHwCounters);
  EXPECT_THAT(ReadPortCounterSets(Paths{.sysfs = kFixture}, "nodev", 1), IsEmpty());
  EXPECT_THAT(ReadPortCounterSets(Paths{.sysfs = kFixture}, "mlx5_0", 2), IsEmpty());
}

TEST(ReadPortCounterSetsTest, TextThatIsNotANumberIsLeftOut) {
  TreeCopy tree;
  WriteInPlace(tree.CounterPath("mlx5_0", "hw_counters", "np_cnp_sent"), "n/a\n");
  auto one = ByDir(ReadPortCounterSets(Paths{.sysfs = tree.sysfs()}, "mlx5_0", 1));
  EXPECT_EQ(one["mlx5_0/1/hw_counters"].count("np_cnp_sent"), 0u);
  EXPECT_EQ(one["mlx5_0/1/hw_counters"].size(), 24u);
}

TEST(CounterFilesParseTest, AcceptsKernelTextAndRejectsTheRest) {
  uint64_t v = 0;
  EXPECT_TRUE(ParseCounterText("18446744073709551615\n", 21, &v));
  EXPECT_EQ(v, 18446744073709551615u);
  EXPECT_TRUE(ParseCounterText("0\n", 2, &v));
  EXPECT_EQ(v, 0u);
  EXPECT_FALSE(ParseCounterText("-1\n", 3, &v));
  EXPECT_FALSE(ParseCounterText("\n", 1, &v));
  EXPECT_FALSE(ParseCounterText("12 ms\n", 6, &v));
  EXPECT_FALSE(ParseCounterText("18446744073709551616\n", 21, &v));
}

// Runs in a forked child (exit code is the verdict): its own network and
// mount namespaces, a veth pair, a sysfs mounted for that namespace, and a
// fixture tree whose counter file is a symlink to the veth's rx_bytes
// attribute. Deleting the veth makes kernfs fail reads of the open file
// with ENODEV, which must drop the device.
int RealAttributeGoneChild(const std::string& dir) {
  if (unshare(CLONE_NEWNET | CLONE_NEWNS) != 0) return 77;
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return 77;
  nl_sock* sock = nl_socket_alloc();
  if (sock == nullptr || nl_connect(sock, NETLINK_ROUTE) != 0) return 10;
  if (rtnl_link_veth_add(sock, "rcfa", "rcfb", getpid()) != 0) return 77;  // no veth module
  const std::string sys = dir + "/sys";
  fs::create_directories(sys);
  if (mount("sysfs", sys.c_str(), "sysfs", 0, nullptr) != 0) return 11;
  const std::string hw = dir + "/tree/class/infiniband/fake0/ports/1/hw_counters";
  fs::create_directories(hw);
  fs::create_symlink(sys + "/class/net/rcfa/statistics/rx_bytes", hw + "/rx_bytes");

  CounterFiles files(Paths{.sysfs = dir + "/tree"}, NoAutoRescan());
  std::vector<PortCounterSet> first = files.Read();
  if (first.size() != 1 || first[0].values.size() != 1 || first[0].values[0].name != "rx_bytes") {
    return 12;
  }
  if (files.open_files() != 1) return 13;

  rtnl_link* link = rtnl_link_alloc();
  rtnl_link_set_name(link, "rcfa");
  if (rtnl_link_delete(sock, link) != 0) return 14;
  rtnl_link_put(link);
  nl_socket_free(sock);

  if (!files.Read().empty()) return 15;
  if (files.open_files() != 0) return 16;
  umount(sys.c_str());
  return 0;
}

TEST(CounterFilesKernelTest, AttributeRemovedByTheKernelDropsItsDevice) {
  std::string tmpl = (fs::temp_directory_path() / "roced-cf-ns-XXXXXX").string();
  std::string dir = mkdtemp(tmpl.data());
  fflush(nullptr);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(RealAttributeGoneChild(dir));
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  fs::remove_all(dir);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "no network namespaces or veth here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "child step failed (see RealAttributeGoneChild)";
}

}  // namespace
}  // namespace roced::hal

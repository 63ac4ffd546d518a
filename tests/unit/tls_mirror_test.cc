// access::TlsMirror: the copies gRPC reads, made from the operator's files
// with every read bounded, replaced only by a set that passes the start-up
// checks (certificates made by openssl at test time).
#include "access/tls_mirror.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "test_certs.h"
#include "test_util.h"
#include "util/fs.h"

namespace roced::access {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using test_util::CertPath;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The operator's files: copies of NAME.crt/key and ca.crt in a directory
// the test can change under the mirror.
class TlsMirrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    (void)test_util::TestCertDir();  // made before any clock is read
    src_ = test_util::MakeTempDir("roced-tls-src");
    Install("admin");
    fs::copy_file(CertPath("ca.crt"), src_ + "/ca.crt");
    sources_ = {src_ + "/node.crt", src_ + "/node.key", src_ + "/ca.crt"};
    options_ = {.dir = src_ + "/copies", .names = {"--tls-cert", "--tls-key", "--tls-client-ca"}};
  }
  void TearDown() override { fs::remove_all(src_); }

  // Renews node.crt/node.key with NAME's, each by a rename (a new inode,
  // as a certificate manager writes them).
  void Install(const std::string& name) {
    for (const char* ext : {".crt", ".key"}) {
      fs::copy_file(CertPath(name + ext), src_ + "/new" + ext, fs::copy_options::overwrite_existing);
      fs::rename(src_ + "/new" + ext, src_ + "/node" + ext);
    }
  }
  // Puts something else in `path`'s place.
  void Replace(const std::string& path, const std::function<void(const std::string&)>& make) {
    fs::remove(path);
    make(path);
  }

  std::string src_;
  TlsFiles sources_;
  TlsMirror::Options options_;
};

TEST_F(TlsMirrorTest, CopiesTheFilesIntoAPrivateDirectoryAndRemovesThemAfter) {
  auto mirror = TlsMirror::Create(sources_, options_);
  ASSERT_TRUE(mirror.ok()) << mirror.status();
  const TlsFiles copies = (*mirror)->copies();
  EXPECT_EQ(copies.cert, src_ + "/copies/cert.pem");
  EXPECT_EQ(Slurp(copies.cert), Slurp(CertPath("admin.crt")));
  EXPECT_EQ(Slurp(copies.key), Slurp(CertPath("admin.key")));
  EXPECT_EQ(Slurp(copies.ca), Slurp(CertPath("ca.crt")));
  struct stat st {};
  ASSERT_EQ(::stat(options_.dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  mirror->reset();
  EXPECT_FALSE(fs::exists(copies.cert));
  EXPECT_FALSE(fs::exists(copies.key));
}

TEST_F(TlsMirrorTest, WithoutADirectoryATemporaryOneIsMadeAndRemoved) {
  options_.dir.clear();
  auto mirror = TlsMirror::Create(sources_, options_);
  ASSERT_TRUE(mirror.ok()) << mirror.status();
  const std::string dir = fs::path((*mirror)->copies().cert).parent_path();
  EXPECT_THAT(dir, HasSubstr("/roced-tls."));
  EXPECT_TRUE(fs::is_directory(dir));
  mirror->reset();
  EXPECT_FALSE(fs::exists(dir));
}

TEST_F(TlsMirrorTest, ARenewedPairReplacesTheCopies) {
  auto mirror = TlsMirror::Create(sources_, options_);
  ASSERT_TRUE(mirror.ok()) << mirror.status();
  EXPECT_TRUE((*mirror)->Refresh().ok());
  EXPECT_EQ((*mirror)->replacements(), 0);  // nothing changed: nothing copied
  Install("viewer");
  absl::Status s = (*mirror)->Refresh();
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ((*mirror)->replacements(), 1);
  EXPECT_EQ(Slurp((*mirror)->copies().cert), Slurp(CertPath("viewer.crt")));
  EXPECT_EQ(Slurp((*mirror)->copies().key), Slurp(CertPath("viewer.key")));
}

// Each bad renewal is refused, names the flag and the operator's file, and
// leaves the last good copies; the same bad files are not read again.
TEST_F(TlsMirrorTest, ABadRenewalIsRefusedAndTheLastGoodCopiesStay) {
  auto mirror = TlsMirror::Create(sources_, options_);
  ASSERT_TRUE(mirror.ok()) << mirror.status();
  const std::string good_cert = Slurp((*mirror)->copies().cert);
  auto refused = [&](const std::string& what) {
    absl::Status s = (*mirror)->Refresh();
    EXPECT_FALSE(s.ok()) << what;
    EXPECT_EQ(Slurp((*mirror)->copies().cert), good_cert) << what;
    EXPECT_EQ((*mirror)->replacements(), 0) << what;
    EXPECT_TRUE((*mirror)->Refresh().ok()) << what << ": the same refused files again";
    return std::string(s.message());
  };
  // A certificate renewed before its key.
  fs::copy_file(CertPath("viewer.crt"), sources_.cert, fs::copy_options::overwrite_existing);
  EXPECT_THAT(refused("mismatch"), HasSubstr("--tls-key " + sources_.key + ": this key does not belong"));
  // A FIFO in the certificate's place: refused at once, not waited on.
  Replace(sources_.cert, [](const std::string& p) { ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0); });
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_THAT(refused("fifo"), HasSubstr("--tls-cert " + sources_.cert + ": PEM file " + sources_.cert + " is a FIFO"));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  // /dev/zero behind a symlink.
  Replace(sources_.cert, [](const std::string& p) { fs::create_symlink("/dev/zero", p); });
  EXPECT_THAT(refused("/dev/zero"), HasSubstr("is a character device"));
  // A file past the bound: refused before it is read.
  Replace(sources_.cert, [](const std::string& p) { fs::resize_file((std::ofstream(p), p), kMaxPemBytes + 1); });
  EXPECT_THAT(refused("huge"), HasSubstr("at most"));
  // The key gone.
  fs::remove(sources_.key);
  Install("viewer");
  fs::remove(sources_.key);
  EXPECT_THAT(refused("no key"), HasSubstr("--tls-key " + sources_.key));
  // Good files again: taken.
  Install("operator");
  EXPECT_TRUE((*mirror)->Refresh().ok());
  EXPECT_EQ(Slurp((*mirror)->copies().cert), Slurp(CertPath("operator.crt")));
}

TEST_F(TlsMirrorTest, ItsThreadTakesARenewalWithinTheInterval) {
  options_.interval = absl::Milliseconds(50);
  auto mirror = TlsMirror::Create(sources_, options_);
  ASSERT_TRUE(mirror.ok()) << mirror.status();
  Install("viewer");
  for (int i = 0; i < 200 && (*mirror)->replacements() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));  // poll: the loop's condition
  }
  EXPECT_EQ((*mirror)->replacements(), 1);
  EXPECT_EQ(Slurp((*mirror)->copies().cert), Slurp(CertPath("viewer.crt")));
}

// Removed under roced (a tmp cleaner): made again at the next check, the
// sources unchanged.
TEST_F(TlsMirrorTest, CopiesRemovedUnderItAreMadeAgain) {
  auto mirror = TlsMirror::Create(sources_, options_);
  ASSERT_TRUE(mirror.ok()) << mirror.status();
  fs::remove_all(options_.dir);
  EXPECT_TRUE((*mirror)->Refresh().ok());
  EXPECT_EQ(Slurp((*mirror)->copies().cert), Slurp(CertPath("admin.crt")));
  EXPECT_EQ(Slurp((*mirror)->copies().ca), Slurp(CertPath("ca.crt")));
}

// A state directory where the copies cannot go (read-only, say): a
// temporary directory instead, not a refusal to start.
TEST_F(TlsMirrorTest, AnUnwritableDirectoryFallsBackToATemporaryOne) {
  options_.dir = "/proc/roced-tls-test";
  auto mirror = TlsMirror::Create(sources_, options_);
  ASSERT_TRUE(mirror.ok()) << mirror.status();
  EXPECT_THAT((*mirror)->copies().cert, HasSubstr("/roced-tls."));
  EXPECT_EQ(Slurp((*mirror)->copies().cert), Slurp(CertPath("admin.crt")));
}

// A directory another user made first could have the CA copy swapped:
// refused, naming both users.
TEST_F(TlsMirrorTest, ADirectoryOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a directory another user owns";
  fs::create_directory(options_.dir);
  ASSERT_EQ(::chown(options_.dir.c_str(), 65534, 65534), 0);
  auto mirror = TlsMirror::Create(sources_, options_);
  ASSERT_FALSE(mirror.ok());
  EXPECT_THAT(std::string(mirror.status().message()), HasSubstr("is owned by uid 65534, not roced's (uid 0)"));
  EXPECT_TRUE(fs::is_empty(options_.dir));
}

TEST_F(TlsMirrorTest, StartUpRefusesWhatTheChecksRefuseAndASymlinkedDirectory) {
  TlsFiles fifo = sources_;
  fifo.ca = src_ + "/ca.fifo";
  ASSERT_EQ(::mkfifo(fifo.ca.c_str(), 0600), 0);
  auto mirror = TlsMirror::Create(fifo, options_);
  ASSERT_FALSE(mirror.ok());
  EXPECT_THAT(std::string(mirror.status().message()), HasSubstr("--tls-client-ca " + fifo.ca + ": "));
  fs::create_directory(src_ + "/elsewhere");
  fs::create_directory_symlink(src_ + "/elsewhere", src_ + "/link");
  options_.dir = src_ + "/link";
  mirror = TlsMirror::Create(sources_, options_);
  ASSERT_FALSE(mirror.ok());
  EXPECT_THAT(std::string(mirror.status().message()), HasSubstr("is not a directory (a symlink); remove it"));
  EXPECT_TRUE(fs::is_empty(src_ + "/elsewhere"));
}

}  // namespace
}  // namespace roced::access

// The gRPC TCP listener (agent/serve/tcp_listener.h) against descriptor
// exhaustion and connection floods: it goes on accepting once descriptors
// are free again, closes connections past its cap, and says both through
// its health callback. Its own binary: one test lowers RLIMIT_NOFILE of
// the whole process.
#include "agent/serve/tcp_listener.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/api/health_service.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "util/tcp.h"

namespace roced::agent {
namespace {

using ::testing::HasSubstr;

// What the listener reported, in order.
class HealthLog {
 public:
  void Add(bool ok, const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.emplace_back(ok, why);
  }
  std::vector<std::pair<bool, std::string>> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  // Waits up to `timeout` for the last event to be `ok`.
  bool WaitFor(bool ok, absl::Duration timeout) const {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!events_.empty() && events_.back().first == ok) return true;
      }
      absl::SleepFor(absl::Milliseconds(20));  // poll: the health events above
    }
    return false;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<bool, std::string>> events_;
};

// A gRPC server (grpc.health.v1) fed by a TcpListener on 127.0.0.1.
class Rig {
 public:
  explicit Rig(int max_connections, int max_per_address = 0)
      : listener_(TcpListenerOptions{"127.0.0.1:0", max_connections, max_per_address,
                                     [this](bool ok, const std::string& why) { health.Add(ok, why); }}) {}
  ~Rig() {
    listener_.Stop();
    health_service_.Shutdown();
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
  }
  void Start() {
    ASSERT_TRUE(listener_.Bind().ok());
    grpc::ServerBuilder builder;
    acceptor_ = builder.experimental().AddExternalConnectionAcceptor(
        grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD, grpc::InsecureServerCredentials());
    builder.RegisterService(&health_service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    health_service_.SetServingStatus("", true);
    listener_.Serve(acceptor_.get());
  }
  int port() const { return listener_.port(); }
  // grpc.health.v1 Check on a new channel (a new connection).
  grpc::Status Check() {
    grpc::ChannelArguments args;
    args.SetInt("grpc.use_local_subchannel_pool", 1);  // a connection of its own
    auto stub = grpc::health::v1::Health::NewStub(grpc::CreateCustomChannel(
        absl::StrCat("127.0.0.1:", port()), grpc::InsecureChannelCredentials(), args));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    grpc::health::v1::HealthCheckRequest request;
    grpc::health::v1::HealthCheckResponse response;
    return stub->Check(&ctx, request, &response);
  }
  HealthLog health;

 private:
  TcpListener listener_;
  HealthService health_service_;
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor_;
  std::unique_ptr<grpc::Server> server_;
};

int OpenDescriptors() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  while (d != nullptr && ::readdir(d) != nullptr) ++n;
  if (d != nullptr) ::closedir(d);
  return n - 3;  // ".", "..", the directory's own descriptor
}

// Descriptor exhaustion: with the process's open-file limit lowered to 48
// above what it has open, connections are opened until no descriptor is
// left, so the listener's accept4() fails with EMFILE (gRPC 1.51's own
// listener stopped accepting for good there). The listener says so, with
// the reason; once the connections close, it says it accepts again and a
// new connection gets its call answered.
TEST(TcpListener, DescriptorExhaustionIsReportedAndRecoveredFrom) {
#ifdef ROCED_UBSAN_VPTR
  // UBSan's vptr check reads an object's memory through a pipe it opens
  // first (sanitizer_common's IsAccessibleMemoryRange); with every
  // descriptor taken the pipe fails and it reports "invalid vptr" on live
  // objects (the log line's ostringstream, gRPC's shared_ptr control blocks).
  // The release run and e2e_grpc_fd_exhaustion (a separate roced process)
  // cover this path; the ASan+UBSan run cannot.
  GTEST_SKIP() << "UBSan's vptr check needs a free descriptor, which this test takes away";
#endif
  Rig rig(/*max_connections=*/100000);
  rig.Start();
  ASSERT_TRUE(rig.Check().ok());
  // Sockets made before the limit is lowered: connected once every
  // descriptor is taken, they are connections the listener cannot accept.
  std::vector<util::UniqueFd> late;
  for (int i = 0; i < 8; ++i) late.emplace_back(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(OpenDescriptors() + 48);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<util::UniqueFd> clients;
  for (int i = 0; i < 200; ++i) {
    absl::StatusOr<util::UniqueFd> fd = util::ConnectTcp("127.0.0.1", static_cast<uint16_t>(rig.port()),
                                                         absl::Now() + absl::Seconds(2));
    if (!fd.ok()) break;  // every descriptor is taken
    clients.push_back(*std::move(fd));
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(rig.port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (const util::UniqueFd& fd : late) (void)::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  const bool reported = rig.health.WaitFor(false, absl::Seconds(5));
  late.clear();
  clients.clear();
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  ASSERT_TRUE(reported) << "no failure reported with the descriptors exhausted";
  EXPECT_THAT(rig.health.events().front().second, HasSubstr("Too many open files"));
  EXPECT_TRUE(rig.health.WaitFor(true, absl::Seconds(5))) << "the listener did not say it accepts again";
  grpc::Status call = rig.Check();
  EXPECT_TRUE(call.ok()) << "a call after the exhaustion: " << call.error_message();
}

// A flood of connections: past the cap each new one is closed at once (its
// client sees the end of the stream, not a hang), health says the cap is
// reached, and once the flood's connections close the listener says it
// accepts again and calls are answered.
TEST(TcpListener, ConnectionsPastTheCapAreClosedAndReported) {
  Rig rig(/*max_connections=*/4);
  rig.Start();
  std::vector<util::UniqueFd> flood;
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<util::UniqueFd> fd = util::ConnectTcp("127.0.0.1", static_cast<uint16_t>(rig.port()),
                                                         absl::Now() + absl::Seconds(2));
    ASSERT_TRUE(fd.ok()) << fd.status();
    flood.push_back(*std::move(fd));
  }
  absl::SleepFor(absl::Milliseconds(200));  // why: gRPC takes the accepted descriptors on its own threads, unseen
  absl::StatusOr<util::UniqueFd> fifth = util::ConnectTcp("127.0.0.1", static_cast<uint16_t>(rig.port()),
                                                          absl::Now() + absl::Seconds(2));
  ASSERT_TRUE(fifth.ok()) << fifth.status();
  ASSERT_TRUE(util::AwaitFd(fifth->get(), POLLIN, absl::Now() + absl::Seconds(2), "fifth").ok())
      << "the connection past the cap was not closed";
  char byte;
  EXPECT_LE(::recv(fifth->get(), &byte, 1, MSG_DONTWAIT), 0);
  ASSERT_TRUE(rig.health.WaitFor(false, absl::Seconds(2)));
  EXPECT_THAT(rig.health.events().back().second, HasSubstr("connection cap: 4"));
  flood.clear();
  EXPECT_TRUE(rig.health.WaitFor(true, absl::Seconds(5)));
  EXPECT_TRUE(rig.Check().ok());
}

// A connection from `source` (a loopback address: all of 127/8 is) to
// 127.0.0.1:port.
util::UniqueFd ConnectFrom(const char* source, int port) {
  util::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &addr.sin_addr);
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << source;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << source;
  return fd;
}

// Whether the server closed `fd` within `wait`.
bool ClosedWithin(const util::UniqueFd& fd, absl::Duration wait) {
  if (!util::AwaitFd(fd.get(), POLLIN, absl::Now() + wait, "connection").ok()) return false;
  char byte;
  return ::recv(fd.get(), &byte, 1, MSG_DONTWAIT) <= 0;
}

// One host flooding the port: past its share (max_per_address) its
// connections are closed at once, while another address still connects
// and calls, and the listener stays healthy (the flood is that host's
// problem, not the agent's).
TEST(TcpListener, OneAddressCannotTakeEveryConnection) {
  Rig rig(/*max_connections=*/16, /*max_per_address=*/4);
  rig.Start();
  std::vector<util::UniqueFd> flood;
  for (int i = 0; i < 4; ++i) flood.push_back(ConnectFrom("127.0.0.2", rig.port()));
  for (const util::UniqueFd& fd : flood) EXPECT_FALSE(ClosedWithin(fd, absl::Milliseconds(100)));
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(ClosedWithin(ConnectFrom("127.0.0.2", rig.port()), absl::Seconds(2))) << "past the share of 4";
  }
  EXPECT_FALSE(ClosedWithin(ConnectFrom("127.0.0.3", rig.port()), absl::Milliseconds(200))) << "another address";
  EXPECT_TRUE(rig.Check().ok()) << "a call from 127.0.0.1 during the flood";
  EXPECT_TRUE(rig.health.events().empty());
  flood.clear();
  absl::SleepFor(absl::Milliseconds(200));  // why: gRPC notices the closes on its own threads, unseen
  EXPECT_FALSE(ClosedWithin(ConnectFrom("127.0.0.2", rig.port()), absl::Milliseconds(200)))
      << "the flooding address connects again once its connections closed";
}

TEST(TcpListener, ABusyPortIsAnErrorNamingTheAddress) {
  TcpListener first(TcpListenerOptions{"127.0.0.1:0", 0, 0, nullptr});
  ASSERT_TRUE(first.Bind().ok());
  const std::string listen = absl::StrCat("127.0.0.1:", first.port());
  TcpListener second(TcpListenerOptions{listen, 0, 0, nullptr});
  absl::Status s = second.Bind();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(s.message()), HasSubstr(listen));
}

TEST(TcpListener, ListensOnTheFormsOfGrpcListen) {
  for (const std::string listen : {"127.0.0.1:0", "0.0.0.0:0", "[::]:0", "localhost:0"}) {
    TcpListener l(TcpListenerOptions{listen, 0, 0, nullptr});
    ASSERT_TRUE(l.Bind().ok()) << listen;
    EXPECT_NE(l.port(), 0) << listen;
    EXPECT_TRUE(util::ConnectTcp("127.0.0.1", static_cast<uint16_t>(l.port()), absl::Now() + absl::Seconds(2)).ok())
        << listen;
  }
  TcpListener bad(TcpListenerOptions{"127.0.0.1:http", 0, 0, nullptr});
  EXPECT_EQ(bad.Bind().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TcpListener, TheDefaultCapIsAQuarterOfTheOpenFileLimitAtMost1024) {
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit low = saved;
  low.rlim_cur = 512;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  const int at512 = DefaultTcpConnectionCap();
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  EXPECT_EQ(at512, 128);
  EXPECT_LE(DefaultTcpConnectionCap(), kMaxTcpConnections);
}

}  // namespace
}  // namespace roced::agent

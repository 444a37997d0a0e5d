// SPDX-License-Identifier: Apache-2.0
// The start-up checks `llmux gateway --check` runs on this machine (config/preflight.hpp): an
// access log that can be appended to, or created, with nothing created, truncated or written by
// the check; a listen port another socket holds; backend hosts that do not resolve. Loopback and
// a temporary directory only.
#include "config/preflight.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace llmux::config {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "llmux-preflight-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, ec);
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Preflight, AccessLogStdoutAndOffPass) {
  EXPECT_TRUE(check_access_log("stdout").ok);
  EXPECT_TRUE(check_access_log("off").ok);
}

TEST(Preflight, ExistingAccessLogIsNeitherTruncatedNorWritten) {
  TempDir dir;
  const fs::path log = dir.path() / "access.log";
  std::ofstream(log) << "{\"earlier\":1}\n";
  const CheckResult r = check_access_log(log.string());
  EXPECT_TRUE(r.ok) << r.to_string();
  EXPECT_EQ(r.subject, "access_log " + log.string());
  EXPECT_EQ(slurp(log), "{\"earlier\":1}\n");
}

TEST(Preflight, MissingAccessLogInWritableDirectoryPassesAndIsNotCreated) {
  TempDir dir;
  const fs::path log = dir.path() / "new.log";
  const CheckResult r = check_access_log(log.string());
  EXPECT_TRUE(r.ok) << r.to_string();
  EXPECT_FALSE(fs::exists(log)) << "the check must not create the file";
  EXPECT_TRUE(fs::is_empty(dir.path())) << "the check must leave nothing behind";
}

TEST(Preflight, AccessLogInMissingDirectoryFails) {
  TempDir dir;
  const fs::path log = dir.path() / "no-such-dir" / "access.log";
  const CheckResult r = check_access_log(log.string());
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.detail.find("does not exist"), std::string::npos) << r.to_string();
  EXPECT_NE(r.detail.find((dir.path() / "no-such-dir").string()), std::string::npos)
      << r.to_string();
  EXPECT_FALSE(fs::exists(dir.path() / "no-such-dir"));
}

TEST(Preflight, AccessLogThatIsADirectoryFails) {
  TempDir dir;
  const CheckResult r = check_access_log(dir.path().string());
  EXPECT_FALSE(r.ok) << r.to_string();
}

TEST(Preflight, AccessLogInReadOnlyDirectoryFails) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into any directory";
  TempDir dir;
  fs::permissions(dir.path(), fs::perms::owner_read | fs::perms::owner_exec);
  const CheckResult r = check_access_log((dir.path() / "access.log").string());
  EXPECT_FALSE(r.ok) << r.to_string();
}

TEST(Preflight, ListenPortHeldByAnotherSocketFails) {
  boost::asio::io_context ioc;
  namespace ip = boost::asio::ip;
  ip::tcp::acceptor holder(ioc, ip::tcp::endpoint(ip::make_address("127.0.0.1"), 0));
  const auto port = holder.local_endpoint().port();
  const CheckResult taken = check_listener({"127.0.0.1", port});
  EXPECT_FALSE(taken.ok);
  EXPECT_NE(taken.detail.find("in use"), std::string::npos) << taken.to_string();
  EXPECT_EQ(taken.subject, "listen 127.0.0.1:" + std::to_string(port));
  // The wildcard address collides with it too.
  EXPECT_FALSE(check_listener({"0.0.0.0", port}).ok);
  holder.close();
  const CheckResult freed = check_listener({"127.0.0.1", port});
  EXPECT_TRUE(freed.ok) << freed.to_string();
  EXPECT_TRUE(check_listener({"127.0.0.1", 0}).ok);
}

TEST(Preflight, BackendHostsResolveOrFailNamingTheBackend) {
  Backend ip;
  ip.name = "literal";
  ip.host = "127.0.0.1";
  ip.port = 30000;
  const CheckResult ok = check_resolves(ip);
  EXPECT_TRUE(ok.ok) << ok.to_string();
  EXPECT_EQ(ok.subject, "backend literal");

  Backend bad;
  bad.name = "nowhere";
  bad.host = "llmux-preflight-test.invalid";  // RFC 6761: never resolves
  bad.port = 30000;
  const CheckResult r = check_resolves(bad);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.subject, "backend nowhere");
  EXPECT_NE(r.detail.find("llmux-preflight-test.invalid"), std::string::npos) << r.to_string();
}

TEST(Preflight, ProbeOfAClosedPortFailsBothRequests) {
  // A port that was just free: nothing listens there, so both requests fail to connect.
  boost::asio::io_context ioc;
  namespace ip = boost::asio::ip;
  ip::tcp::acceptor holder(ioc, ip::tcp::endpoint(ip::make_address("127.0.0.1"), 0));
  Backend b;
  b.name = "closed";
  b.host = "127.0.0.1";
  b.port = holder.local_endpoint().port();
  holder.close();
  const auto rs = probe_backends({&b}, Millis(2000));
  ASSERT_EQ(rs.size(), 2u);
  for (const auto& r : rs) {
    EXPECT_FALSE(r.ok) << r.to_string();
    EXPECT_EQ(r.subject, "backend closed");
  }
  EXPECT_NE(rs[0].detail.find("GET /health"), std::string::npos) << rs[0].to_string();
  EXPECT_NE(rs[1].detail.find("GET /v1/models"), std::string::npos) << rs[1].to_string();
}

}  // namespace
}  // namespace llmux::config

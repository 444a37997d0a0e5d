// `llmux gateway` refuses to start on an invalid configuration and says everything that is
// wrong at once (exit status 2, one line per error); `--check` validates without serving.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "support/gateway_support.hpp"
#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

// The lines of the error report: the gateway indents each error by two spaces under a heading.
std::vector<std::string> error_lines(const std::string& err) {
  std::vector<std::string> out;
  std::istringstream in(err);
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("  ")) out.push_back(line.substr(2));
  return out;
}

TEST(GatewayConfig, InvalidFileExits2AndReportsEveryError) {
  TempDir dir;
  // Three distinct problems: a thread count out of range, an https backend, and a route naming
  // a backend that does not exist.
  const std::string path = dir.write("bad.yaml",
                                     "listen: \"127.0.0.1:0\"\n"
                                     "threads: 5000\n"
                                     "backends:\n"
                                     "  - {name: server1, url: \"http://127.0.0.1:30001\"}\n"
                                     "  - {name: server2, url: \"https://127.0.0.1:30002\"}\n"
                                     "routes:\n"
                                     "  - {name: all, backends: [server1, server3]}\n");
  RunResult r = run_gateway({"--config", path});
  ASSERT_FALSE(r.timed_out) << "the gateway started on an invalid config: " << r.out;
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out.find("\"ready\""), std::string::npos) << "it must not start: " << r.out;
  const auto lines = error_lines(r.err);
  ASSERT_EQ(lines.size(), 3u) << r.err;
  const char* fields[] = {"threads", "backends[1].url", "routes[0].backends[1]"};
  for (const char* f : fields) {
    bool found = false;
    for (const auto& l : lines) found = found || l.starts_with(std::string(f) + ":");
    EXPECT_TRUE(found) << "no error about " << f << " in:\n" << r.err;
  }
  EXPECT_NE(r.err.find("'5000'"), std::string::npos) << "errors quote the value: " << r.err;
  EXPECT_NE(r.err.find("'server3'"), std::string::npos) << r.err;
}

TEST(GatewayConfig, SyntaxAndUnknownKeysAreErrorsWithTheirLine) {
  TempDir dir;
  RunResult syntax =
      run_gateway({"--config", dir.write("syntax.yaml", "backends: [\n  - {name: a\n")});
  EXPECT_EQ(syntax.exit_code, 2) << syntax.err;
  EXPECT_NE(syntax.err.find("line "), std::string::npos) << syntax.err;

  RunResult typo =
      run_gateway({"--config", dir.write("typo.yaml",
                                         "backends:\n  - {name: a, url: \"http://127.0.0.1:1\"}\n"
                                         "routes:\n  - {backends: [a], polcy: first}\n")});
  EXPECT_EQ(typo.exit_code, 2) << typo.err;
  const auto lines = error_lines(typo.err);
  ASSERT_EQ(lines.size(), 1u) << typo.err;
  EXPECT_NE(lines[0].find("polcy"), std::string::npos) << typo.err;
  EXPECT_NE(lines[0].find("line 4"), std::string::npos) << typo.err;
}

TEST(GatewayConfig, MissingFileAndBadQuickFormExit2) {
  RunResult missing = run_gateway({"--config", "/nonexistent/llmux-gateway.yaml"});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_FALSE(missing.err.empty());
  RunResult quick = run_gateway({"--port", "0", "--backend", "no-equals-sign"});
  EXPECT_EQ(quick.exit_code, 2) << quick.err;
  EXPECT_FALSE(quick.err.empty());
  RunResult nothing = run_gateway({});
  EXPECT_EQ(nothing.exit_code, 2) << nothing.err;
}

TEST(GatewayConfig, CheckAcceptsTheSeedConfig) {
  RunResult r = run_gateway({"--check", "--config", source_dir() + "/examples/seed.yaml"});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("2 backends"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3 routes"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\"ready\""), std::string::npos) << "--check must not serve: " << r.out;
}

TEST(GatewayConfig, CheckRejectsWhatServingWould) {
  TempDir dir;
  RunResult r =
      run_gateway({"--check", "--config",
                   dir.write("bad.yaml", "backends: []\nroutes: []\ntimeouts: {idle: 0ms}\n")});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_GE(error_lines(r.err).size(), 2u) << r.err;
}

}  // namespace
}  // namespace llmux::test

// SPDX-License-Identifier: Apache-2.0
// The dashboard's static files compiled into the binary (src/gateway/dashboard_assets.hpp):
// every file of src/gateway/dashboard/ is found by its path, byte for byte, with the content
// type of its extension.
#include "gateway/dashboard_assets.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace llmux::gateway {
namespace {

namespace fs = std::filesystem;

const fs::path kSourceDir = LLMUX_DASHBOARD_SOURCE_DIR;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(DashboardAssets, ThePageUnderEveryName) {
  const DashboardAsset* page = find_dashboard_asset("index.html");
  ASSERT_NE(page, nullptr);
  EXPECT_EQ(page->path, "index.html");
  EXPECT_EQ(page->content_type, "text/html; charset=utf-8");
  EXPECT_EQ(page->body, read_file(kSourceDir / "index.html"));
  EXPECT_EQ(find_dashboard_asset(""), page);
  EXPECT_EQ(find_dashboard_asset("/"), page);
  EXPECT_EQ(find_dashboard_asset("/index.html"), page);
}

TEST(DashboardAssets, ScriptsAndStylesWithTheirTypes) {
  const DashboardAsset* uplot = find_dashboard_asset("vendor/uPlot.iife.min.js");
  ASSERT_NE(uplot, nullptr);
  EXPECT_EQ(uplot->content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(uplot->body, read_file(kSourceDir / "vendor/uPlot.iife.min.js"));
  EXPECT_GT(uplot->body.size(), 10'000u);
  const DashboardAsset* css = find_dashboard_asset("vendor/uPlot.min.css");
  ASSERT_NE(css, nullptr);
  EXPECT_EQ(css->content_type, "text/css; charset=utf-8");
  ASSERT_NE(find_dashboard_asset("app.js"), nullptr);
  EXPECT_EQ(find_dashboard_asset("app.js")->content_type, "text/javascript; charset=utf-8");
  ASSERT_NE(find_dashboard_asset("style.css"), nullptr);
  EXPECT_EQ(find_dashboard_asset("style.css")->content_type, "text/css; charset=utf-8");
  ASSERT_NE(find_dashboard_asset("vendor/uPlot.LICENSE.txt"), nullptr);
  EXPECT_EQ(find_dashboard_asset("vendor/uPlot.LICENSE.txt")->content_type,
            "text/plain; charset=utf-8");
}

TEST(DashboardAssets, EveryFileEmbeddedExactly) {
  std::size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(kSourceDir)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = fs::relative(e.path(), kSourceDir).generic_string();
    if (e.path().filename().string().starts_with('.') || rel.ends_with('~')) continue;
    ++files;
    const DashboardAsset* a = find_dashboard_asset(rel);
    ASSERT_NE(a, nullptr) << rel;
    EXPECT_EQ(a->body, read_file(e.path())) << rel;
  }
  EXPECT_EQ(dashboard_assets().size(), files);
}

TEST(DashboardAssets, UnknownNamesAreNotFound) {
  EXPECT_EQ(find_dashboard_asset("nope.js"), nullptr);
  EXPECT_EQ(find_dashboard_asset("../gateway.hpp"), nullptr);
  EXPECT_EQ(find_dashboard_asset("vendor"), nullptr);
  EXPECT_EQ(find_dashboard_asset("vendor/"), nullptr);
  EXPECT_EQ(find_dashboard_asset("app.js?v=1"), nullptr);
  EXPECT_EQ(find_dashboard_asset("data"), nullptr);  // the gateway answers /dashboard/data itself
}

}  // namespace
}  // namespace llmux::gateway

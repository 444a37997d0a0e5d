// SPDX-License-Identifier: Apache-2.0
#pragma once
// The live dashboard's static files (src/gateway/dashboard/), compiled into the binary: the
// build turns every file of that directory into bytes of a generated source
// (embed_dashboard.cmake), so `GET /dashboard` needs nothing on disk.

#include <span>
#include <string_view>

namespace llmux::gateway {

struct DashboardAsset {
  std::string_view path;          // relative to /dashboard/: "app.js", "vendor/uPlot.min.css"
  std::string_view content_type;  // from the extension: "text/javascript; charset=utf-8"
  std::string_view body;          // the file's bytes, exactly
};

// The file at `path`, relative to /dashboard/ ("" or "index.html": the page; one leading '/' is
// ignored), or nullptr. Exact names only: no query string, no "..", no directory listings.
const DashboardAsset* find_dashboard_asset(std::string_view path);

// Every embedded file, sorted by path.
std::span<const DashboardAsset> dashboard_assets();

}  // namespace llmux::gateway

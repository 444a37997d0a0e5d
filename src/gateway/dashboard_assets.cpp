// SPDX-License-Identifier: Apache-2.0
#include "gateway/dashboard_assets.hpp"

namespace llmux::gateway {

// Defined in the generated dashboard_assets_data.cpp (embed_dashboard.cmake), sorted by path.
extern const DashboardAsset kDashboardAssets[];
extern const std::size_t kDashboardAssetCount;

std::span<const DashboardAsset> dashboard_assets() {
  return {kDashboardAssets, kDashboardAssetCount};
}

const DashboardAsset* find_dashboard_asset(std::string_view path) {
  if (path.starts_with('/')) path.remove_prefix(1);
  if (path.empty()) path = "index.html";
  for (const DashboardAsset& asset : dashboard_assets()) {  // a dozen files: a scan is enough
    if (asset.path == path) return &asset;
  }
  return nullptr;
}

}  // namespace llmux::gateway

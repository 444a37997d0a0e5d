// SPDX-License-Identifier: Apache-2.0
#pragma once
// least_load: the backend with the least load, as the gateway counts it and as the backend
// reports it itself (`backend_metrics`: vLLM's /metrics, read off the request path by
// gateway/scrape.hpp). A backend's load is the larger of the gateway's in-flight requests on it
// and the requests it reports running plus waiting (other clients — another gateway replica,
// someone connected directly — count too), plus its waiting requests once more (they wait for a
// place in the batch, which is worse than sharing one); ties go to the lower KV-cache usage, then
// as least_inflight. A backend whose report is stale or missing counts as busier than every
// backend with a fresh one; when no candidate has a fresh report, least_inflight decides alone.
#include "policy/least_inflight.hpp"
#include "policy/policy.hpp"

namespace llmux::policy {

class LeastLoad final : public Policy {
 public:
  std::string_view name() const override { return "least_load"; }
  Backend* select(const PickContext& ctx, std::span<Backend* const> candidates,
                  FunctionRef<bool(const Backend&)> accept) override;

 private:
  LeastInflight fallback_;
};

}  // namespace llmux::policy

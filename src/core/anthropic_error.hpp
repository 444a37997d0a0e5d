// SPDX-License-Identifier: Apache-2.0
#pragma once
// Anthropic's error body, what a Messages API client (Claude Code, Anthropic's SDKs) reads:
//   {"type":"error","error":{"type":"invalid_request_error","message":"..."}}
// with the error types of Anthropic's API reference (docs.anthropic.com, "Errors"):
//   400 invalid_request_error   401 authentication_error   402 billing_error
//   403 permission_error        404 not_found_error        413 request_too_large
//   429 rate_limit_error        500 api_error              504 timeout_error
//   529 overloaded_error
// Anthropic says "overloaded" with 529 where an HTTP intermediary says 503: the gateway's own
// 503 (no usable backend, a queue timeout) goes to a Messages client as 529, which Claude Code
// and the SDKs retry.
#include <string>
#include <string_view>

namespace llmux {

/// The status a Messages client gets for the gateway's `status` (503 → 529; others unchanged).
int anthropic_status(int status);

/// Anthropic's error `type` for an HTTP status (after anthropic_status()).
std::string_view anthropic_error_type(int status);

/// Serialises an error body for `status` (the type from anthropic_error_type()).
std::string anthropic_error_json(int status, std::string_view message);

}  // namespace llmux

// SPDX-License-Identifier: Apache-2.0
#include "core/anthropic_error.hpp"

#include <boost/json.hpp>

namespace llmux {

int anthropic_status(int status) {
  return status == 503 ? 529 : status;
}

std::string_view anthropic_error_type(int status) {
  switch (status) {
    case 401:
      return "authentication_error";
    case 402:
      return "billing_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
    case 529:
      return "overloaded_error";
    case 504:
      return "timeout_error";
    default:
      return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

std::string anthropic_error_json(int status, std::string_view message) {
  boost::json::object error;
  error["type"] = anthropic_error_type(status);
  error["message"] = message;
  boost::json::object body;
  body["type"] = "error";
  body["error"] = std::move(error);
  return boost::json::serialize(body);
}

}  // namespace llmux

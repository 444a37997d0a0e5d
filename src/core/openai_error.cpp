// SPDX-License-Identifier: Apache-2.0
#include "core/openai_error.hpp"

#include <boost/json.hpp>

namespace llmux {

std::string_view error_type_for_status(int status) {
  switch (status) {
    case 400:
      return "BadRequestError";
    case 401:
      return "AuthenticationError";
    case 403:
      return "PermissionDeniedError";
    case 404:
      return "NotFoundError";
    case 408:
      return "RequestTimeoutError";
    case 409:
      return "ConflictError";
    case 413:
      return "RequestTooLargeError";
    case 422:
      return "UnprocessableEntityError";
    case 429:
      return "RateLimitError";
    case 431:
      return "RequestHeaderFieldsTooLargeError";
    case 502:
      return "BadGatewayError";
    case 503:
      return "ServiceUnavailableError";
    case 504:
      return "GatewayTimeoutError";
    default:
      return status >= 500 ? "InternalServerError" : "BadRequestError";
  }
}

namespace {

std::string error_json(int status, std::string_view message, std::string_view type,
                       std::optional<std::string_view> param, std::string_view code) {
  boost::json::object err;
  err["message"] = message;
  err["type"] = type.empty() ? error_type_for_status(status) : type;
  if (param) {
    err["param"] = *param;
  } else {
    err["param"] = nullptr;
  }
  if (code.empty()) {
    err["code"] = status;
  } else {
    err["code"] = code;
  }
  boost::json::object body;
  body["error"] = std::move(err);
  return boost::json::serialize(body);
}

}  // namespace

std::string openai_error_json(int status, std::string_view message, std::string_view type,
                              std::optional<std::string_view> param) {
  return error_json(status, message, type, param, {});
}

std::string openai_error_json(int status, std::string_view message, std::string_view type,
                              std::optional<std::string_view> param, std::string_view code) {
  return error_json(status, message, type, param, code);
}

}  // namespace llmux

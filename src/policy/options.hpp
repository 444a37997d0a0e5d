// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reading a policy's options (config's `policy_options`, name → text) into its settings: each
// policy reads its own, beside its code (e.g. ConsistentHash::from_options), with this reader.
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "policy/policy.hpp"

namespace llmux::policy {

/// Reads the options a policy knows into its settings; any other option, or a value that does
/// not read, is an error (the first one is kept in `*error`).
class OptionReader {
 public:
  OptionReader(std::string_view policy, const Options& options, std::string* error)
      : policy_(policy), options_(options), error_(error) {}

  /// The option names the policy knows (any other is an error).
  void know(std::initializer_list<std::string_view> keys) { known_ = keys; }
  /// A number within [lowest, highest] (whole for an integral `out`), when the option is given.
  void number(const char* key, double& out, double lowest, double highest);
  void number(const char* key, int& out, double lowest, double highest);
  void number(const char* key, std::size_t& out, double lowest, double highest);
  void string(const char* key, std::string& out);
  void fail(std::string why);
  /// True when every option was known and read.
  bool done();

 private:
  /// The option's value read as a number within the bounds; false (and the error) otherwise.
  bool read_number(const char* key, bool whole, double lowest, double highest, double& value);
  bool known(const std::string& name) const;
  std::string_view policy_;
  const Options& options_;
  std::string* error_;
  std::vector<std::string_view> known_;
  std::size_t seen_ = 0;
  bool ok_ = true;
};

/// For a policy without options: true when `options` is empty, else false with the error.
bool no_options(std::string_view policy, const Options& options, std::string* error);

}  // namespace llmux::policy

// One route/access-log header condition (Http::HeaderUtility::HeaderData*,
// source/common/http/header_utility.h:71-277, built by createHeaderData in header_utility.cc).
// Envoy v1.39 matches every value of a repeated header
// on its own (matchesHeadersIndividually, runtime guard
// envoy.reloadable_features.match_headers_individually, on by default): a normal matcher
// matches when any value matches, an inverted one when no value matches. An absent header
// never matches a value matcher, inverted or not, unless treat_missing_header_as_empty makes
// it "". The present matcher is present != invert for a present header and invert == present
// for an absent one. range matches a value absl::SimpleAtoi reads as an int64 in [start, end).
//
// Not modelled: Envoy's HTTP/1 codec folds repeated O(1) ("inline") headers such as user-agent
// into one comma-joined value (HeaderMapImpl::insertByKey); moe-host keeps every line as its own
// value, so a repeated inline header is matched value by value here.
#pragma once
#include <memory>
#include <regex>
#include <string_view>

#include "bootstrap.h"
#include "header_map.h"

namespace moe {

class HeaderMatcherImpl {
public:
  // Throws std::runtime_error for an invalid regex.
  explicit HeaderMatcherImpl(const bootstrap::HeaderMatcher& config);
  bool matches(const HeaderMap& headers) const;

private:
  bool matchesValue(std::string_view value) const;
  // absl::SimpleAtoi for int64_t: ASCII whitespace around, an optional sign, decimal digits,
  // no overflow.
  static bool simpleAtoi(std::string_view s, int64_t* out);

  bootstrap::HeaderMatcher config_;
  std::unique_ptr<std::regex> regex_;  // kind SafeRegex
};

} // namespace moe

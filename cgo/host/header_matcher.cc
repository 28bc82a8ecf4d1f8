#include "header_matcher.h"

#include <cstdint>
#include <stdexcept>

namespace moe {

HeaderMatcherImpl::HeaderMatcherImpl(const bootstrap::HeaderMatcher& config) : config_(config) {
  config_.name = lowerCase(config_.name);  // LowerCaseString name_
  if (config_.kind == bootstrap::HeaderMatcher::Kind::SafeRegex) {
    try {
      regex_ = std::make_unique<std::regex>(config_.value, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw std::runtime_error("header matcher: invalid regex '" + config_.value + "': " + e.what());
    }
  }
}

bool HeaderMatcherImpl::simpleAtoi(std::string_view s, int64_t* out) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return false;
  // Accumulate as a negative number so INT64_MIN is representable.
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    int d = c - '0';
    if (v < (INT64_MIN + d) / 10) return false;
    v = v * 10 - d;
  }
  if (!negative) {
    if (v == INT64_MIN) return false;
    v = -v;
  }
  *out = v;
  return true;
}

// The specific matchers' specificMatchesHeaders; ignore_case lowercases both sides
// (StringMatcherImpl), never for safe_regex. A deprecated exact_match "" matches any value
// (HeaderDataExactMatch); moectl compiles it as prefix "" so exact here is always the
// StringMatcher's exact.
bool HeaderMatcherImpl::matchesValue(std::string_view value_in) const {
  using Kind = bootstrap::HeaderMatcher::Kind;
  if (config_.kind == Kind::SafeRegex) return std::regex_match(value_in.begin(), value_in.end(), *regex_);
  if (config_.kind == Kind::Range) {
    // HeaderDataRangeMatch: half-open [start, end).
    int64_t n = 0;
    return simpleAtoi(value_in, &n) && n >= config_.range_start && n < config_.range_end;
  }
  std::string value(value_in), pattern(config_.value);
  if (config_.ignore_case) {
    value = lowerCase(value);
    pattern = lowerCase(pattern);
  }
  switch (config_.kind) {
  case Kind::Exact: return value == pattern;
  case Kind::Prefix: return value.compare(0, pattern.size(), pattern) == 0;
  case Kind::Suffix:
    return value.size() >= pattern.size() && value.compare(value.size() - pattern.size(), pattern.size(), pattern) == 0;
  case Kind::Contains: return value.find(pattern) != std::string::npos;
  case Kind::SafeRegex:
  case Kind::Range:
  case Kind::Present: break;
  }
  return false;
}

bool HeaderMatcherImpl::matches(const HeaderMap& headers) const {
  auto values = headers.getAll(config_.name);
  if (config_.kind == bootstrap::HeaderMatcher::Kind::Present) {
    // HeaderDataPresentMatch::matchesHeaders.
    if (values.empty() && !config_.treat_missing_as_empty) return config_.invert == config_.present;
    return config_.present != config_.invert;
  }
  // HeaderDataBaseImpl::matchesHeadersIndividually.
  if (values.empty()) {
    if (!config_.treat_missing_as_empty) return false;
    return matchesValue("") != config_.invert;
  }
  for (const auto& v : values) {
    if (matchesValue(v)) return !config_.invert;
  }
  return config_.invert;
}

} // namespace moe

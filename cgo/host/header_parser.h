// HeaderParser (source/common/router/header_parser.cc): one level's *_headers_to_remove and
// *_headers_to_add. Removals first; then every value is formatted from the headers as they are
// before any addition; then overwrites are set, then additions appended. A value that formats
// to "" is skipped unless keep_empty_value.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "bootstrap.h"
#include "formatter.h"
#include "header_map.h"
#include "stream_info.h"

namespace moe {

class HeaderParser {
public:
  HeaderParser(const std::vector<bootstrap::HeaderToAdd>& add, const std::vector<std::string>& remove);
  void evaluate(HeaderMap& headers, const FormatContext& ctx, const StreamInfo& info) const;
  bool empty() const { return add_.empty() && remove_.empty(); }

private:
  struct Entry {
    std::string key;
    Formatter formatter;
    bootstrap::HeaderToAdd::Action action;
    bool keep_empty;
  };
  std::vector<Entry> add_;
  std::vector<std::string> remove_;
};

// The request and response parsers of one route configuration, virtual host or route.
struct HeaderParsers {
  explicit HeaderParsers(const bootstrap::HeaderMutations& m)
      : request(m.request_add, m.request_remove), response(m.response_add, m.response_remove) {}
  HeaderParser request, response;
};

} // namespace moe

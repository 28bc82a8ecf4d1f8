#include "header_parser.h"

namespace moe {

HeaderParser::HeaderParser(const std::vector<bootstrap::HeaderToAdd>& add, const std::vector<std::string>& remove)
    : remove_(remove) {
  for (auto& a : add) add_.push_back(Entry{a.key, Formatter(a.value), a.action, a.keep_empty_value});
}

// HeaderParser::evaluateHeaders.
void HeaderParser::evaluate(HeaderMap& headers, const FormatContext& ctx, const StreamInfo& info) const {
  for (auto& h : remove_) headers.remove(h);
  std::vector<std::pair<const std::string*, std::string>> to_add, to_overwrite;
  for (auto& e : add_) {
    std::string value = e.formatter.format(ctx, info);
    if (value.empty() && !e.keep_empty) continue;
    switch (e.action) {
    case bootstrap::HeaderToAdd::Action::AppendIfExistsOrAdd:
      to_add.emplace_back(&e.key, std::move(value));
      break;
    case bootstrap::HeaderToAdd::Action::AddIfAbsent:
      if (headers.get(e.key) == nullptr) to_add.emplace_back(&e.key, std::move(value));
      break;
    case bootstrap::HeaderToAdd::Action::OverwriteIfExists:
      if (headers.get(e.key) == nullptr) break;
      [[fallthrough]];
    case bootstrap::HeaderToAdd::Action::OverwriteIfExistsOrAdd:
      to_overwrite.emplace_back(&e.key, std::move(value));
      break;
    }
  }
  // setReferenceKey: every value of the key removed, one added at the end.
  for (auto& [k, v] : to_overwrite) headers.setCopy(*k, v);
  for (auto& [k, v] : to_add) headers.addCopy(*k, v);
}

} // namespace moe

// HeaderMap: ordered (key, value) entries like Envoy's HeaderMapImpl. Keys are stored
// lowercased. Request maps keep the pseudo-headers (:authority :path :method :scheme, or
// :status on responses) first, as Envoy's codec produces them; byteSize() is what Envoy's
// byteSize() returns (sum of key and value lengths), which the golang ABI passes to Go as
// header_bytes, so it must describe exactly what copyTo() writes.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace moe {

// ASCII lower case, inline: header names are ASCII tokens and Envoy lowers them with a
// table (absl::AsciiStrToLower), not with libc's locale-aware std::tolower, which is a
// call per byte (12.5k instructions a request of make bench's B3 went there).
inline char asciiLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + ('a' - 'A')) : c; }

inline std::string lowerCase(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = asciiLower(c);
  return out;
}

// ASCII case-insensitive equality (header names, tokens, upgrade types).
inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++) {
    if (asciiLower(a[i]) != asciiLower(b[i])) return false;
  }
  return true;
}

// lowered == lowerCase(key), without building the lowered copy. Not iequals: stored keys are
// lowered already, and lowering them again on every lookup cost 1.2k of B0's 81.3k instructions.
inline bool equalsLowered(std::string_view lowered, std::string_view key) {
  if (lowered.size() != key.size()) return false;
  for (size_t i = 0; i < key.size(); i++) {
    if (lowered[i] != asciiLower(key[i])) return false;
  }
  return true;
}

class HeaderMap {
public:
  using Entry = std::pair<std::string, std::string>;

  size_t size() const { return entries_.size(); }
  uint64_t byteSize() const {
    uint64_t n = 0;
    for (auto& e : entries_) n += e.first.size() + e.second.size();
    return n;
  }
  const std::vector<Entry>& entries() const { return entries_; }

  // First value of key (lowercased by the caller or not), or nullptr.
  const std::string* get(std::string_view key) const {
    for (auto& e : entries_) if (equalsLowered(e.first, key)) return &e.second;
    return nullptr;
  }
  std::vector<std::string> getAll(std::string_view key) const {
    std::vector<std::string> out;
    for (auto& e : entries_) if (equalsLowered(e.first, key)) out.push_back(e.second);
    return out;
  }
  // addCopy: append another value. Pseudo-headers are inserted before regular headers.
  void addCopy(std::string_view key, std::string_view value) {
    // Room for a typical message's headers at once: growing 1, 2, 4, 8, 16 moved
    // every entry four times (5.9k instructions a request under callgrind), where
    // Envoy's HeaderMapImpl links one node per header and never moves them.
    if (entries_.capacity() == 0) entries_.reserve(kInitialEntries);
    std::string k = lowerCase(key);
    if (!k.empty() && k[0] == ':') {
      auto it = std::find_if(entries_.begin(), entries_.end(),
                             [](const Entry& e) { return e.first.empty() || e.first[0] != ':'; });
      entries_.insert(it, Entry(std::move(k), std::string(value)));
      return;
    }
    entries_.emplace_back(std::move(k), std::string(value));
  }
  // setCopy: Envoy's HeaderMapImpl::setCopy (source/common/http/header_map_impl.cc:326-329)
  // removes every entry with this key, then adds one: a repeated header becomes one value, at
  // the end (pseudo-headers stay in front, as addCopy keeps them).
  void setCopy(std::string_view key, std::string_view value) {
    std::string k = lowerCase(key);
    remove(k);
    addCopy(k, value);
  }
  // setReference in Envoy semantics for single-valued headers: remove all, then add.
  void setOnly(std::string_view key, std::string_view value) { remove(key); addCopy(key, value); }
  size_t remove(std::string_view key) {
    size_t before = entries_.size();
    entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                  [&](const Entry& e) { return equalsLowered(e.first, key); }),
                   entries_.end());
    return before - entries_.size();
  }
  void clear() { entries_.clear(); }
  void iterate(const std::function<void(const std::string&, const std::string&)>& cb) const {
    for (auto& e : entries_) cb(e.first, e.second);
  }

  // Convenience accessors for pseudo-headers.
  std::string_view path() const { auto* v = get(":path"); return v ? std::string_view(*v) : std::string_view(); }
  std::string_view method() const { auto* v = get(":method"); return v ? std::string_view(*v) : std::string_view(); }
  std::string_view host() const { auto* v = get(":authority"); return v ? std::string_view(*v) : std::string_view(); }
  int status() const { auto* v = get(":status"); return v ? std::atoi(v->c_str()) : 0; }

private:
  static constexpr size_t kInitialEntries = 16;
  std::vector<Entry> entries_;
};
using HeaderMapPtr = std::unique_ptr<HeaderMap>;

// Http::Utility::isUpgrade (utility.cc:668-674): an upgrade header and "upgrade" among the
// comma-separated tokens of connection (case-insensitive, optional whitespace around tokens).
inline bool isUpgradeRequest(const HeaderMap& headers) {
  const std::string* conn = headers.get("connection");
  if (headers.get("upgrade") == nullptr || conn == nullptr) return false;
  std::string_view v = *conn;
  while (!v.empty()) {
    size_t comma = v.find(',');
    std::string_view item = v.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (lowerCase(item) == "upgrade") return true;
    if (comma == std::string_view::npos) break;
    v.remove_prefix(comma + 1);
  }
  return false;
}

// Utility::isWebSocketUpgradeRequest: an upgrade whose upgrade header is "websocket" (any case).
inline bool isWebSocketUpgradeRequest(const HeaderMap& headers) {
  if (!isUpgradeRequest(headers)) return false;
  return iequals(*headers.get("upgrade"), "websocket");
}

} // namespace moe

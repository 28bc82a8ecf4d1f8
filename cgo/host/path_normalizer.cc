#include "path_normalizer.h"

#include <cstddef>
#include <string_view>

namespace moe {

namespace {

// How the URL path canonicaliser treats a byte. Envoy 1.39 calls url::CanonicalizePath from
// googleurl (path_utility.cc canonicalizePath); these classes are those of the Chromium
// canonicaliser Envoy carried as source/common/chromium_url before it switched to googleurl.
// Written here from that behaviour (no URL library on this machine does exactly this).
enum class PathChar : uint8_t {
  Pass,     // copied as is, and kept escaped when it arrives escaped
  Escape,   // written as %XX, and kept escaped when it arrives escaped
  Unescape, // unreserved: copied, and decoded when it arrives escaped
  Invalid,  // NUL: the path is refused
};

PathChar classOf(unsigned char c) {
  if (c == 0) return PathChar::Invalid;
  if (c < 0x20 || c >= 0x7f) return PathChar::Escape;
  if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) return PathChar::Unescape;
  switch (c) {
  case '-': case '_': case '~': case '.':
    return PathChar::Unescape;
  case ' ': case '"': case '#': case '%': case '<': case '>': case '?': case '\\': case '^':
  case '`': case '{': case '|': case '}':
    return PathChar::Escape;
  default: // ! $ & ' ( ) * + , / : ; = @ [ ]
    return PathChar::Pass;
  }
}

bool isHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int hexValue(char c) {
  if (c <= '9') return c - '0';
  return (c | 0x20) - 'a' + 10;
}

// A "%XX" at in[i] with two hex digits.
bool escapeAt(std::string_view in, size_t i) {
  return i + 2 < in.size() && in[i] == '%' && isHex(in[i + 1]) && isHex(in[i + 2]);
}

// Length of a dot at in[i]: "." is 1, "%2e"/"%2E" is 3, anything else 0.
size_t dotAt(std::string_view in, size_t i) {
  if (in[i] == '.') return 1;
  if (i + 2 < in.size() && in[i] == '%' && in[i + 1] == '2' && (in[i + 2] == 'e' || in[i + 2] == 'E')) return 3;
  return 0;
}

bool isSlash(char c) { return c == '/' || c == '\\'; }

enum class Dot { Name, Current, Up };

// What a dot that follows a slash is: "." or "./" the current segment, ".." or "../" one up,
// anything else part of a name. consumed is what it took after the first dot.
Dot classifyDot(std::string_view in, size_t after, size_t& consumed) {
  consumed = 0;
  if (after == in.size()) return Dot::Current;
  if (isSlash(in[after])) {
    consumed = 1;
    return Dot::Current;
  }
  if (size_t second = dotAt(in, after)) {
    size_t end = after + second;
    if (end == in.size()) {
      consumed = second;
      return Dot::Up;
    }
    if (isSlash(in[end])) {
      consumed = second + 1;
      return Dot::Up;
    }
  }
  return Dot::Name;
}

// Drops the last segment of out (which ends with '/'), never the leading slash.
void backUpOneSegment(std::string& out) {
  size_t i = out.size() - 1;
  if (i == 0) return; // ".." above the root stays at the root
  i--;
  while (i > 0 && out[i] != '/') i--;
  out.resize(i + 1);
}

void appendEscaped(std::string& out, unsigned char c) {
  static const char kHex[] = "0123456789ABCDEF";
  out.push_back('%');
  out.push_back(kHex[c >> 4]);
  out.push_back(kHex[c & 0xf]);
}

// After decoding a character within two bytes of an earlier '%' that did not start an escape
// ("%%30" read as "%0"), the output may now hold a valid escape the input did not have
// ("%%300" -> "%00"); that '%' is escaped to "%25" so a second decoding cannot read one.
void escapeNestedPercent(std::string_view in, size_t next, size_t percent_at, std::string& out) {
  const size_t len = out.size();
  const bool need_next = percent_at + 2 == len; // out ends "%c": complete it with the next byte
  if (need_next) {
    if (next == in.size() || static_cast<unsigned char>(in[next]) >= 0x80) return;
    out.push_back(in[next]);
  }
  const bool valid = isHex(out[percent_at + 1]) && isHex(out[percent_at + 2]);
  if (need_next) out.resize(len); // the next byte is read by the caller's loop as usual
  if (valid) out.insert(percent_at + 1, "25");
}

// The canonical form of a path without its query; nullopt when refused.
std::optional<std::string> canonicalize(std::string_view in) {
  std::string out;
  out.reserve(in.size() + 1);
  if (in.empty() || !isSlash(in[0])) out.push_back('/');
  bool ok = true;
  constexpr size_t kNone = static_cast<size_t>(-1);
  size_t bad_percent = kNone; // index in out of the last '%' that began no escape
  for (size_t i = 0; i < in.size(); i++) {
    const unsigned char c = static_cast<unsigned char>(in[i]);
    if (size_t dot = dotAt(in, i)) {
      if (!out.empty() && out.back() == '/') {
        size_t consumed;
        switch (classifyDot(in, i + dot, consumed)) {
        case Dot::Name:
          out.push_back('.');
          break;
        case Dot::Current:
          break;
        case Dot::Up:
          backUpOneSegment(out);
          // A '%' in the dropped segment is gone (fuzz finding: a stale index made
          // escapeNestedPercent insert past the end and throw).
          if (bad_percent != kNone && bad_percent >= out.size()) bad_percent = kNone;
          break;
        }
        i += dot + consumed - 1;
      } else {
        out.push_back('.');
        i += dot - 1;
      }
    } else if (c == '\\') {
      out.push_back('/');
    } else if (c == '%') {
      if (escapeAt(in, i)) {
        const unsigned char decoded = static_cast<unsigned char>(hexValue(in[i + 1]) * 16 + hexValue(in[i + 2]));
        const PathChar cls = classOf(decoded);
        if (cls == PathChar::Unescape) {
          out.push_back(static_cast<char>(decoded));
          if (bad_percent != kNone && bad_percent + 3 >= out.size()) escapeNestedPercent(in, i + 3, bad_percent, out);
        } else {
          // Kept as written (hex case too: a server may be sensitive to it).
          out.append(in.substr(i, 3));
          if (cls == PathChar::Invalid) ok = false;
        }
        i += 2;
      } else {
        // Not an escape: passed through, remembered for escapeNestedPercent.
        bad_percent = out.size();
        out.push_back('%');
      }
    } else {
      switch (classOf(c)) {
      case PathChar::Invalid:
        appendEscaped(out, c);
        ok = false;
        break;
      case PathChar::Escape:
        appendEscaped(out, c);
        break;
      default:
        out.push_back(static_cast<char>(c));
      }
    }
  }
  if (!ok) return std::nullopt;
  return out;
}

// The path part of a :path and the query that follows it ('?' included).
std::pair<std::string_view, std::string_view> splitQuery(std::string_view path) {
  size_t q = path.find('?');
  if (q == std::string_view::npos) return {path, {}};
  return {path.substr(0, q), path.substr(q)};
}

} // namespace

bool canonicalPath(std::string& path) {
  auto [p, query] = splitQuery(path);
  std::optional<std::string> canonical = canonicalize(p);
  if (!canonical) return false;
  canonical->append(query);
  path = std::move(*canonical);
  return true;
}

void mergeSlashes(std::string& path) {
  auto [p, query] = splitQuery(path);
  if (p.find("//") == std::string_view::npos) return;
  std::string out;
  out.reserve(path.size());
  if (!p.empty() && p.front() == '/') out.push_back('/');
  bool first = true;
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string_view::npos) end = p.size();
    if (end > start) {
      if (!first) out.push_back('/');
      out.append(p.substr(start, end - start));
      first = false;
    }
    start = end + 1;
  }
  // As Envoy's StrCat(prefix, join, suffix): a path of slashes only ("//") stays "//".
  if (!p.empty() && p.back() == '/') out.push_back('/');
  out.append(query);
  path = std::move(out);
}

bool unescapeSlashes(std::string& path) {
  auto [p, query] = splitQuery(path);
  if (p.find('%') == std::string_view::npos) return false;
  std::string out;
  out.reserve(path.size());
  bool found = false;
  for (size_t i = 0; i < p.size(); i++) {
    if (p[i] == '%' && i + 2 < p.size()) {
      const char a = p[i + 1], b = p[i + 2];
      if (a == '2' && (b == 'F' || b == 'f')) {
        out.push_back('/');
        i += 2;
        found = true;
        continue;
      }
      if (a == '5' && (b == 'C' || b == 'c')) {
        out.push_back('\\');
        i += 2;
        found = true;
        continue;
      }
    }
    out.push_back(p[i]);
  }
  if (!found) return false;
  out.append(query);
  path = std::move(out);
  return true;
}

bool rewritesPath(const bootstrap::HttpConnectionManager& hcm) {
  return hcm.normalize_path || hcm.merge_slashes ||
         hcm.path_with_escaped_slashes_action != bootstrap::HttpConnectionManager::EscapedSlashesAction::KeepUnchanged;
}

NormalizePathAction maybeNormalizePath(std::string& path, const bootstrap::HttpConnectionManager& hcm) {
  // envoy.reloadable_features.http_reject_path_with_fragment (on in 1.39): a '#' anywhere is
  // refused, never silently cut, so a filter cannot match a path the upstream reads otherwise.
  if (path.find('#') != std::string::npos) return NormalizePathAction::Reject;
  using Action = bootstrap::HttpConnectionManager::EscapedSlashesAction;
  NormalizePathAction result = NormalizePathAction::Continue;
  if (hcm.path_with_escaped_slashes_action != Action::KeepUnchanged && unescapeSlashes(path)) {
    if (hcm.path_with_escaped_slashes_action == Action::RejectRequest) return NormalizePathAction::Reject;
    if (hcm.path_with_escaped_slashes_action == Action::UnescapeAndRedirect) result = NormalizePathAction::Redirect;
  }
  if (hcm.normalize_path && !canonicalPath(path)) return NormalizePathAction::Reject;
  // After canonicalisation, which can leave "//" (percent-encoding edge cases).
  if (hcm.merge_slashes) mergeSlashes(path);
  return result;
}

std::optional<uint32_t> maybeNormalizeHost(std::string& host, const bootstrap::HttpConnectionManager& hcm,
                                           uint32_t listener_port) {
  if (hcm.strip_trailing_host_dot) {
    // A dot at the end, or right before the port's colon (an IPv6 address never has a dot
    // directly before a colon).
    size_t dot = host.rfind('.');
    if (dot != std::string::npos) {
      if (dot + 1 == host.size()) host.pop_back();
      else if (host[dot + 1] == ':') host.erase(dot, 1);
    }
  }
  using Strip = bootstrap::HttpConnectionManager::StripPort;
  if (hcm.strip_port == Strip::None) return std::nullopt;
  // HeaderUtility::getPortStart: the last ':' that is not inside an IPv6 literal's brackets.
  size_t colon = host.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  size_t bracket = host.rfind(']');
  if (bracket != std::string::npos && bracket > colon) return std::nullopt;
  std::string_view digits = std::string_view(host).substr(colon + 1);
  // absl::SimpleAtoi into uint32: decimal digits (an optional '+'), no overflow.
  if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
  if (digits.empty() || digits.size() > 10) return std::nullopt;
  uint64_t port = 0;
  for (char d : digits) {
    if (d < '0' || d > '9') return std::nullopt;
    port = port * 10 + static_cast<uint64_t>(d - '0');
  }
  if (port > UINT32_MAX) return std::nullopt;
  if (hcm.strip_port == Strip::MatchingHost && port != listener_port) return std::nullopt;
  host.resize(colon);
  return static_cast<uint32_t>(port);
}

} // namespace moe

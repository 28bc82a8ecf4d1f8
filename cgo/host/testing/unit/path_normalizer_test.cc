// Unit checks for path_normalizer (Envoy's maybeNormalizePath / maybeNormalizeHost and the
// URL path canonicaliser). Run with: make -C cgo/host unit
#include <cstdio>
#include <optional>
#include <string>

#include "path_normalizer.h"

using namespace moe;

static int failures = 0;

static void expectEq(const char* what, const std::string& input, const std::string& got, const std::string& want) {
  if (got != want) {
    std::fprintf(stderr, "FAIL %s(%s) = %s, want %s\n", what, input.c_str(), got.c_str(), want.c_str());
    failures++;
  }
}

// canonicalPath's result, or "<refused>".
static std::string canonical(std::string path) {
  return canonicalPath(path) ? path : "<refused>";
}

static std::string merged(std::string path) {
  mergeSlashes(path);
  return path;
}

static const char* actionName(NormalizePathAction a) {
  switch (a) {
  case NormalizePathAction::Continue: return "continue";
  case NormalizePathAction::Reject: return "reject";
  case NormalizePathAction::Redirect: return "redirect";
  }
  return "?";
}

int main() {
  struct { const char* in; const char* want; } canon[] = {
      {"/a/b/../c", "/a/c"},
      {"/a/./b", "/a/b"},
      {"/../a", "/a"},
      {"/a/..", "/"},
      {"/a/.", "/a/"},
      {"/.", "/"},
      {"/a/.b", "/a/.b"},
      {"/a/..b/c", "/a/..b/c"},
      {"/a/b.", "/a/b."},
      {"/a/%2e%2E/b", "/b"},              // escaped dots are dots
      {"/a/.%2e/b", "/b"},
      {"/a/%2e/b", "/a/b"},
      {"/a/x%2e", "/a/x."},               // a decoded dot inside a name
      {"/a\\..\\b", "/b"},                // backslash is a slash
      {"/%41%62%7e%2D%5f", "/Ab~-_"},     // unreserved characters are decoded
      {"/%2F%2f", "/%2F%2f"},             // an escaped slash stays escaped, hex case kept
      {"/%5C", "/%5C"},
      {"/%25", "/%25"},
      {"/%7B{", "/%7B%7B"},               // '{' is escaped; an escaped one is kept
      {"/a b\"<>^`|}", "/a%20b%22%3C%3E%5E%60%7C%7D"},
      {"/\xc3\xa9", "/%C3%A9"},           // bytes >= 0x80 are escaped
      {"/a\x01", "/a%01"},
      {"/!$&'()*+,;=:@[]", "/!$&'()*+,;=:@[]"},
      {"/%zz%4", "/%zz%4"},               // not escapes: passed through
      {"/%%30%30", "/%2500"},             // nested escape: the outer '%' is escaped
      {"/x%%3/../%330", "/30"},           // fuzz finding: a '%' in a dropped segment
      {"/%%340/../a", "/a"},
      {"/a//b", "/a//b"},                 // the canonicaliser does not merge slashes
      {"/a/..?x=/../#", "/?x=/../#"},     // the query is left alone
      {"/a%00", "<refused>"},
  };
  for (auto& c : canon) expectEq("canonicalPath", c.in, canonical(c.in), c.want);
  expectEq("canonicalPath", "raw NUL", canonical(std::string("/a\0b", 4)), "<refused>");

  struct { const char* in; const char* want; } merge[] = {
      {"//a///b/", "/a/b/"},
      {"/a//b?x=//y", "/a/b?x=//y"},
      {"/a/b", "/a/b"},
      {"//", "//"}, // Envoy's StrCat(prefix, join, suffix)
  };
  for (auto& m : merge) expectEq("mergeSlashes", m.in, merged(m.in), m.want);

  {
    std::string p = "/a%2Fb%5cc?x=%2F";
    bool found = unescapeSlashes(p);
    expectEq("unescapeSlashes", "/a%2Fb%5cc?x=%2F", p + (found ? " found" : ""), "/a/b\\c?x=%2F found");
    std::string q = "/a%2?x=%2F";
    found = unescapeSlashes(q);
    expectEq("unescapeSlashes", "/a%2?x=%2F", q + (found ? " found" : ""), "/a%2?x=%2F");
  }

  using Action = bootstrap::HttpConnectionManager::EscapedSlashesAction;
  struct {
    bool normalize, merge;
    Action escaped;
    const char* in;
    NormalizePathAction want;
    const char* path;
  } paths[] = {
      {false, false, Action::KeepUnchanged, "/a#frag", NormalizePathAction::Reject, ""},
      {false, false, Action::KeepUnchanged, "/a/../b%2F", NormalizePathAction::Continue, "/a/../b%2F"},
      {false, false, Action::RejectRequest, "/a%2fb", NormalizePathAction::Reject, ""},
      {false, false, Action::RejectRequest, "/a/b?x=%2f", NormalizePathAction::Continue, "/a/b?x=%2f"},
      {false, false, Action::UnescapeAndRedirect, "/a%2Fb", NormalizePathAction::Redirect, "/a/b"},
      {false, false, Action::UnescapeAndRedirect, "/a/b", NormalizePathAction::Continue, "/a/b"},
      {false, false, Action::UnescapeAndForward, "/a%5Cb", NormalizePathAction::Continue, "/a\\b"},
      {true, false, Action::UnescapeAndForward, "/a%5C..%5Cb", NormalizePathAction::Continue, "/b"},
      {true, false, Action::KeepUnchanged, "/a%00", NormalizePathAction::Reject, ""},
      {true, true, Action::KeepUnchanged, "/a/%2e%2e//b", NormalizePathAction::Continue, "/b"},
      {false, true, Action::KeepUnchanged, "//a/./b", NormalizePathAction::Continue, "/a/./b"},
  };
  for (auto& c : paths) {
    bootstrap::HttpConnectionManager hcm;
    hcm.normalize_path = c.normalize;
    hcm.merge_slashes = c.merge;
    hcm.path_with_escaped_slashes_action = c.escaped;
    std::string p = c.in;
    NormalizePathAction got = maybeNormalizePath(p, hcm);
    std::string want = std::string(actionName(c.want)) + (c.want == NormalizePathAction::Reject ? "" : std::string(" ") + c.path);
    expectEq("maybeNormalizePath", c.in, std::string(actionName(got)) + (got == NormalizePathAction::Reject ? "" : " " + p), want);
  }

  using Strip = bootstrap::HttpConnectionManager::StripPort;
  struct {
    Strip strip;
    bool dot;
    const char* in;
    const char* want;
    std::optional<uint32_t> port;
  } hosts[] = {
      {Strip::None, true, "example.com.", "example.com", std::nullopt},
      {Strip::None, true, "example.com.:80", "example.com:80", std::nullopt},
      {Strip::None, false, "example.com.", "example.com.", std::nullopt},
      {Strip::Any, false, "a:80", "a", 80},
      {Strip::Any, false, "[::1]:8080", "[::1]", 8080},
      {Strip::Any, false, "[::1]", "[::1]", std::nullopt},
      {Strip::Any, false, "a:x", "a:x", std::nullopt},
      {Strip::Any, false, "a:", "a:", std::nullopt},
      {Strip::MatchingHost, false, "a:10000", "a", 10000},
      {Strip::MatchingHost, false, "a:81", "a:81", std::nullopt},
      {Strip::Any, true, "a.:80", "a", 80},
  };
  for (auto& h : hosts) {
    bootstrap::HttpConnectionManager hcm;
    hcm.strip_port = h.strip;
    hcm.strip_trailing_host_dot = h.dot;
    std::string host = h.in;
    std::optional<uint32_t> port = maybeNormalizeHost(host, hcm, 10000);
    auto show = [](const std::string& s, std::optional<uint32_t> p) { return s + " port " + (p ? std::to_string(*p) : "-"); };
    expectEq("maybeNormalizeHost", h.in, show(host, port), show(h.want, h.port));
  }

  if (failures) {
    std::fprintf(stderr, "%d path_normalizer checks failed\n", failures);
    return 1;
  }
  std::printf("path_normalizer: all checks passed\n");
  return 0;
}

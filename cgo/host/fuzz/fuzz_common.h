// Helpers shared by moe-host's libFuzzer targets: invariant checks that abort with a message
// (libFuzzer then saves the input), and an HTTP/1 message reader on http_parser that the
// targets use to read back what the codec wrote.
#pragma once
#include <http_parser.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "header_map.h"
#include "http1_codec.h"

namespace moe::fuzz {

[[noreturn]] inline void fail(const char* what, const std::string& detail = "") {
  fprintf(stderr, "INVARIANT VIOLATED: %s %s\n", what, detail.c_str());
  abort();
}
// FUZZ_CHECK(cond) or FUZZ_CHECK(cond, message): the message is printed as is (pass bytes from
// the input or the output through describe()).
#define FUZZ_CHECK(cond, ...)                                                                      \
  do {                                                                                             \
    if (!(cond)) ::moe::fuzz::fail("(" #cond ")", ::moe::fuzz::message(__VA_ARGS__));              \
  } while (0)

inline std::string message() { return ""; }
inline std::string message(const std::string& s) { return s; }
inline std::string message(const char* s) { return s; }

// Printable form of bytes.
inline std::string describe(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

inline bool isHopByHop(std::string_view k) {
  return k == "transfer-encoding" || k == "connection" || k == "keep-alive" || k == "proxy-connection" ||
         k == "upgrade";
}

inline bool isLower(std::string_view k) {
  for (char c : k) {
    if (c >= 'A' && c <= 'Z') return false;
  }
  return true;
}

// What a codec hands upward must be writable as is: a token name (lower case, pseudo-headers
// only where allowed) and a value without NUL/CR/LF and without surrounding whitespace.
inline void checkEntry(std::string_view k, std::string_view v, bool pseudo_ok) {
  FUZZ_CHECK(!k.empty(), describe(k));
  FUZZ_CHECK(isLower(k), describe(k));
  if (k[0] == ':') {
    FUZZ_CHECK(pseudo_ok, describe(k));
  } else {
    FUZZ_CHECK(validHeaderName(k), describe(k));
  }
  FUZZ_CHECK(validHeaderValue(v), describe(v));
  if (k[0] != ':' && !v.empty()) {
    FUZZ_CHECK(v.front() != ' ' && v.front() != '\t' && v.back() != ' ' && v.back() != '\t', describe(v));
  }
}

// One parsed HTTP/1 message.
struct Message {
  int status = 0;
  std::string method, url;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::vector<std::pair<std::string, std::string>> trailers;
  std::string body;
  bool complete = false;
  bool keep_alive = true;

  const std::string* get(std::string_view k) const {
    for (auto& [n, v] : headers)
      if (n == k) return &v;
    return nullptr;
  }
  size_t count(std::string_view k) const {
    size_t n = 0;
    for (auto& h : headers) n += h.first == k;
    return n;
  }
};

// Reads a byte stream of HTTP/1 messages with http_parser. head_for(i) says whether message i
// answers a HEAD request (no body follows its headers).
class Reader {
public:
  Reader(http_parser_type type, std::vector<bool> head) : head_(std::move(head)) {
    http_parser_init(&p_, type);
    p_.data = this;
    http_parser_settings_init(&s_);
    s_.on_message_begin = [](http_parser* p) {
      auto* r = self(p);
      r->msgs.emplace_back();
      r->in_trailers_ = false;
      r->last_value_ = false;
      return 0;
    };
    s_.on_url = [](http_parser* p, const char* at, size_t n) {
      self(p)->msgs.back().url.append(at, n);
      return 0;
    };
    s_.on_header_field = [](http_parser* p, const char* at, size_t n) {
      auto* r = self(p);
      auto& list = r->in_trailers_ ? r->msgs.back().trailers : r->msgs.back().headers;
      if (r->last_value_ || list.empty()) list.emplace_back();
      r->last_value_ = false;
      list.back().first.append(lowerCase(std::string_view(at, n)));
      return 0;
    };
    s_.on_header_value = [](http_parser* p, const char* at, size_t n) {
      auto* r = self(p);
      auto& list = r->in_trailers_ ? r->msgs.back().trailers : r->msgs.back().headers;
      if (list.empty()) list.emplace_back();
      r->last_value_ = true;
      list.back().second.append(at, n);
      return 0;
    };
    s_.on_headers_complete = [](http_parser* p) {
      auto* r = self(p);
      auto& m = r->msgs.back();
      m.status = p->status_code;
      if (p->type == HTTP_REQUEST) m.method = http_method_str(static_cast<http_method>(p->method));
      r->in_trailers_ = true;
      r->last_value_ = false;
      // 1xx responses are not answers: they do not take a HEAD slot.
      const bool interim = p->type == HTTP_RESPONSE && m.status >= 100 && m.status < 200;
      size_t i = r->answers_;
      if (!interim) r->answers_++;
      return (!interim && i < r->head_.size() && r->head_[i]) ? 1 : 0;
    };
    s_.on_body = [](http_parser* p, const char* at, size_t n) {
      self(p)->msgs.back().body.append(at, n);
      return 0;
    };
    s_.on_message_complete = [](http_parser* p) {
      auto& m = self(p)->msgs.back();
      m.complete = true;
      m.keep_alive = http_should_keep_alive(p) != 0;
      return 0;
    };
  }
  // Feeds everything; returns false on a parse error.
  bool feed(std::string_view data) {
    size_t n = http_parser_execute(&p_, &s_, data.data(), data.size());
    if (HTTP_PARSER_ERRNO(&p_) != HPE_OK || n != data.size()) {
      error = http_errno_name(HTTP_PARSER_ERRNO(&p_));
      return false;
    }
    return true;
  }
  // The stream ended; true when it ended between messages (a body read to EOF is complete).
  bool eof() {
    http_parser_execute(&p_, &s_, nullptr, 0);
    return HTTP_PARSER_ERRNO(&p_) == HPE_OK && (msgs.empty() || msgs.back().complete);
  }

  std::vector<Message> msgs;
  std::string error;

private:
  static Reader* self(http_parser* p) { return static_cast<Reader*>(p->data); }
  http_parser p_;
  http_parser_settings s_;
  std::vector<bool> head_;
  size_t answers_ = 0;
  bool in_trailers_ = false, last_value_ = false;
};

}  // namespace moe::fuzz

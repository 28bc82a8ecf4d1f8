#include "formatter.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <regex>
#include <stdexcept>

#include "proto_wire.h"

namespace moe {

// ---------------------------------------------------------------------------------------------
// JSON helpers (source/common/json/json_sanitizer.cc, json_streamer.h)
// ---------------------------------------------------------------------------------------------

namespace {

// utf8_range::IsStructurallyValid.
bool validUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; k++) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    }
    i += n;
  }
  return true;
}

std::string shortestDouble(double d) {
  if (std::isnan(d) || std::isinf(d)) return "null";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), d);
  return std::string(buf, r.ptr);
}

} // namespace

// Json::sanitize: control characters, '"' and '\' escaped (nlohmann's escapes for valid UTF-8,
// \u00XX for every byte needing one otherwise).
std::string jsonEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  const bool valid = validUtf8(s);
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (!valid && (c < 0x20 || c == '"' || c == '\\' || c >= 0x7f)) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
      continue;
    }
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      if (c < 0x20) {
        char buf[8];
        snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else {
        out.push_back(ch);
      }
    }
  }
  return out;
}

std::string jsonQuote(std::string_view s) { return "\"" + jsonEscape(s) + "\""; }

FormatValue FormatProvider::formatValue(const FormatContext& c, const StreamInfo& i) const {
  // ValueUtil::optionalStringValue(format()).
  FormatValue v;
  if (auto s = format(c, i)) v.json = jsonQuote(*s);
  return v;
}

namespace {

using Clock = std::chrono::steady_clock;

void truncate(std::string& s, std::optional<uint64_t> max) {
  if (max && s.size() > *max) s.resize(*max);
}

// ---------------------------------------------------------------------------------------------
// Providers
// ---------------------------------------------------------------------------------------------

class PlainString : public FormatProvider {
public:
  explicit PlainString(std::string s) : s_(std::move(s)) {}
  std::optional<std::string> format(const FormatContext&, const StreamInfo&) const override { return s_; }

private:
  std::string s_;
};

using StringFn = std::function<std::optional<std::string>(const FormatContext&, const StreamInfo&)>;

// StreamInfoStringFormatterProvider.
class StringProvider : public FormatProvider {
public:
  explicit StringProvider(StringFn fn) : fn_(std::move(fn)) {}
  std::optional<std::string> format(const FormatContext& c, const StreamInfo& i) const override { return fn_(c, i); }

private:
  StringFn fn_;
};

// StreamInfoUInt64FormatterProvider: always a value, a number in JSON.
class NumberProvider : public FormatProvider {
public:
  explicit NumberProvider(std::function<uint64_t(const FormatContext&, const StreamInfo&)> fn) : fn_(std::move(fn)) {}
  std::optional<std::string> format(const FormatContext& c, const StreamInfo& i) const override {
    return std::to_string(fn_(c, i));
  }
  FormatValue formatValue(const FormatContext& c, const StreamInfo& i) const override {
    return FormatValue{shortestDouble(static_cast<double>(fn_(c, i)))};
  }

private:
  std::function<uint64_t(const FormatContext&, const StreamInfo&)> fn_;
};

// StreamInfoDurationFormatterProvider: whole milliseconds, a number in JSON.
class DurationProvider : public FormatProvider {
public:
  using Fn = std::function<std::optional<Clock::duration>(const StreamInfo&)>;
  explicit DurationProvider(Fn fn) : fn_(std::move(fn)) {}
  std::optional<std::string> format(const FormatContext&, const StreamInfo& i) const override {
    auto ms = millis(i);
    if (!ms) return std::nullopt;
    return std::to_string(*ms);
  }
  FormatValue formatValue(const FormatContext&, const StreamInfo& i) const override {
    auto ms = millis(i);
    if (!ms) return FormatValue{};
    return FormatValue{shortestDouble(static_cast<double>(*ms))};
  }

private:
  std::optional<int64_t> millis(const StreamInfo& i) const {
    auto d = fn_(i);
    if (!d) return std::nullopt;
    return std::chrono::duration_cast<std::chrono::milliseconds>(*d).count();
  }
  Fn fn_;
};

// HeaderFormatter: the first value of the main header, else of the alternative.
class HeaderProvider : public FormatProvider {
public:
  enum class Which { Request, Response, Trailers };
  HeaderProvider(Which w, std::string main, std::string alt, std::optional<uint64_t> max)
      : which_(w), main_(std::move(main)), alt_(std::move(alt)), max_(max) {}
  std::optional<std::string> format(const FormatContext& c, const StreamInfo&) const override {
    const HeaderMap* h = which_ == Which::Request ? c.request_headers
                         : which_ == Which::Response ? c.response_headers : c.response_trailers;
    if (h == nullptr) return std::nullopt;
    const std::string* v = h->get(main_);
    if (v == nullptr && !alt_.empty()) v = h->get(alt_);
    if (v == nullptr) return std::nullopt;
    std::string out = *v;
    truncate(out, max_);
    return out;
  }

private:
  Which which_;
  std::string main_, alt_;
  std::optional<uint64_t> max_;
};

// DateFormatter (source/common/common/utility.cc): strftime pieces plus Envoy's %s, %f/%Nf/%*f
// and absl's %E#S/%E*S/%E#f/%E*f subsecond specifiers.
class DateFormatter {
public:
  DateFormatter(const std::string& format, bool local) : local_(local) {
    static const std::regex kSpec("(%[1-9*]?f|%s|%E[1-9*][Sf])");
    std::string rest = format;
    std::smatch m;
    while (std::regex_search(rest, m, kSpec)) {
      std::string prefix = m.prefix().str();
      const std::string matched = m.str();
      Spec spec;
      if (matched.size() == 2) {
        if (matched[1] == 's') {
          spec.type = Spec::Second;
        } else {
          spec.type = Spec::Subsecond;
          spec.width = 9;
        }
      } else if (matched.size() == 3) {
        spec.type = Spec::Subsecond;
        spec.width = matched[1] == '*' ? 255 : matched[1] - '0';
      } else {
        if (matched[3] == 'S') {
          prefix += "%S";  // absl prints the seconds, the subseconds follow
          spec.type = Spec::AbslSubsecondS;
        } else {
          spec.type = Spec::Subsecond;
        }
        spec.width = matched[2] == '*' ? 255 : matched[2] - '0';
      }
      if (!prefix.empty()) specs_.push_back(Spec{Spec::String, prefix, 0});
      specs_.push_back(spec);
      rest = m.suffix().str();
    }
    if (!rest.empty()) specs_.push_back(Spec{Spec::String, rest, 0});
  }

  std::string fromTime(std::chrono::system_clock::time_point t) const {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    const time_t secs = static_cast<time_t>(ns / 1000000000);
    struct tm tmv;
    if (local_) localtime_r(&secs, &tmv);
    else gmtime_r(&secs, &tmv);
    char nanos[16];
    snprintf(nanos, sizeof(nanos), "%09lld", static_cast<long long>(ns % 1000000000));
    std::string out;
    for (auto& s : specs_) {
      switch (s.type) {
      case Spec::String:
        if (s.str.find('%') == std::string::npos) {
          out += s.str;
        } else {
          char buf[512];
          size_t n = strftime(buf, sizeof(buf), s.str.c_str(), &tmv);
          out.append(buf, n);
        }
        break;
      case Spec::Second:
        out += std::to_string(static_cast<long long>(secs));
        break;
      case Spec::AbslSubsecondS:
      case Spec::Subsecond: {
        std::string_view digits(nanos, 9);
        size_t width = s.width;
        if (width == 255) {
          size_t last = digits.find_last_not_of('0');
          width = last == std::string_view::npos ? 0 : last + 1;
        }
        if (s.type == Spec::AbslSubsecondS) {
          if (width > 0) out += "." + std::string(digits.substr(0, width));
        } else {
          out += std::string(digits.substr(0, std::max<size_t>(width, 1)));
        }
        break;
      }
      }
    }
    return out;
  }

private:
  struct Spec {
    enum Type { String, Second, Subsecond, AbslSubsecondS } type;
    std::string str;
    size_t width = 0;
  };
  bool local_;
  std::vector<Spec> specs_;
};

// SystemTimeFormatter: START_TIME / EMIT_TIME, default AccessLogDateTimeFormatter's format.
class TimeProvider : public FormatProvider {
public:
  TimeProvider(const std::string& format, bool local, bool emit)
      : fmt_(format.empty() ? (local ? "%Y-%m-%dT%H:%M:%E3S%z" : "%Y-%m-%dT%H:%M:%E3SZ") : format, local), emit_(emit) {}
  std::optional<std::string> format(const FormatContext&, const StreamInfo& i) const override {
    return fmt_.fromTime(emit_ ? std::chrono::system_clock::now() : i.start_time);
  }

private:
  DateFormatter fmt_;
  bool emit_;
};

std::string valueJson(const proto::Value& v) {
  switch (v.kind) {
  case proto::Value::Kind::NotSet:
  case proto::Value::Kind::Null: return "null";
  case proto::Value::Kind::Number: return shortestDouble(v.number);
  case proto::Value::Kind::String: return jsonQuote(v.str);
  case proto::Value::Kind::Bool: return v.b ? "true" : "false";
  case proto::Value::Kind::Struct: {
    std::string out = "{";
    bool first = true;
    for (auto& [k, e] : v.fields) {
      if (!first) out += ",";
      first = false;
      out += jsonQuote(k) + ":" + valueJson(e);
    }
    return out + "}";
  }
  case proto::Value::Kind::List: {
    std::string out = "[";
    for (size_t i = 0; i < v.list.size(); i++) {
      if (i) out += ",";
      out += valueJson(v.list[i]);
    }
    return out + "]";
  }
  }
  return "null";
}

// DynamicMetadataFormatter (MetadataFormatter): filter_metadata[ns], or the value at a path
// of keys inside it; strings as themselves in text, everything else as JSON.
class MetadataProvider : public FormatProvider {
public:
  MetadataProvider(std::vector<std::string> args, std::optional<uint64_t> max)
      : ns_(args.empty() ? "" : args[0]), path_(args.size() > 1 ? std::vector<std::string>(args.begin() + 1, args.end())
                                                                 : std::vector<std::string>{}),
        max_(max) {}

  std::optional<std::string> format(const FormatContext&, const StreamInfo& i) const override {
    proto::Value v = lookup(i);
    if (v.kind == proto::Value::Kind::NotSet || v.kind == proto::Value::Kind::Null) return std::nullopt;
    std::string out = v.kind == proto::Value::Kind::String ? v.str : valueJson(v);
    truncate(out, max_);
    return out;
  }

  FormatValue formatValue(const FormatContext&, const StreamInfo& i) const override {
    proto::Value v = lookup(i);
    if (v.kind == proto::Value::Kind::NotSet) return FormatValue{};
    if (max_ && v.kind != proto::Value::Kind::Struct && v.kind != proto::Value::Kind::List) {
      std::string s = v.kind == proto::Value::Kind::String ? v.str : valueJson(v);
      if (s.size() > *max_) {
        s.resize(*max_);
        return FormatValue{jsonQuote(s)};
      }
    }
    return FormatValue{valueJson(v)};
  }

private:
  // Config::Metadata::metadataValue.
  proto::Value lookup(const StreamInfo& i) const {
    auto it = i.dynamic_metadata.find(ns_);
    if (it == i.dynamic_metadata.end()) return proto::Value();
    proto::Value root;
    root.kind = proto::Value::Kind::Struct;
    for (auto& [k, bytes] : it->second) {
      proto::Value v;
      if (proto::decodeValue(bytes, &v)) root.fields[k] = std::move(v);
    }
    if (path_.empty()) return root;
    const proto::Value* cur = &root;
    for (auto& key : path_) {
      if (cur->kind != proto::Value::Kind::Struct) return proto::Value();
      auto f = cur->fields.find(key);
      if (f == cur->fields.end()) return proto::Value();
      cur = &f->second;
    }
    return *cur;
  }

  std::string ns_;
  std::vector<std::string> path_;
  std::optional<uint64_t> max_;
};

// FilterStateFormatter over the string objects the golang filter stores (StringAccessorImpl:
// PLAIN is the string, TYPED its google.protobuf.StringValue as JSON, a JSON string; FIELD
// finds no field).
class FilterStateProvider : public FormatProvider {
public:
  FilterStateProvider(std::vector<std::string> args, std::optional<uint64_t> max)
      : key_(args.at(0)), type_(args.size() > 1 ? args[1] : "TYPED"), max_(max) {}

  std::optional<std::string> format(const FormatContext&, const StreamInfo& i) const override {
    auto it = i.filter_state.find(key_);
    if (it == i.filter_state.end() || type_ == "FIELD") return std::nullopt;
    std::string out = type_ == "PLAIN" ? it->second : jsonQuote(it->second);
    truncate(out, max_);
    return out;
  }
  FormatValue formatValue(const FormatContext&, const StreamInfo& i) const override {
    auto it = i.filter_state.find(key_);
    if (it == i.filter_state.end() || type_ == "FIELD") return FormatValue{};
    std::string s = it->second;
    if (type_ == "PLAIN") truncate(s, max_);  // jsonConvertValue of TYPED is not truncated
    return FormatValue{jsonQuote(s)};
  }

private:
  std::string key_, type_;
  std::optional<uint64_t> max_;
};

// Address helpers (StreamInfoAddressFormatterProvider / StreamInfo::Utility).
std::string withoutPort(const std::string& addr) {
  if (!addr.empty() && addr.front() == '[') return addr.substr(1, addr.find(']') - 1);
  size_t colon = addr.rfind(':');
  return colon == std::string::npos ? addr : addr.substr(0, colon);
}

std::optional<uint32_t> portOf(const std::string& addr) {
  size_t colon = addr.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  try {
    return static_cast<uint32_t>(std::stoul(addr.substr(colon + 1)));
  } catch (...) {
    return std::nullopt;
  }
}

// formatDownstreamAddressNoPort with a mask: CidrRange::asString ("10.1.2.0/24").
std::string masked(const std::string& ip, int len) {
  unsigned char buf[16];
  int family = ip.find(':') != std::string::npos ? AF_INET6 : AF_INET;
  if (inet_pton(family, ip.c_str(), buf) != 1) return "";
  const int bits = family == AF_INET ? 32 : 128;
  if (len < 0) len = 0;
  if (len > bits) len = bits;
  for (int b = len; b < bits; b++) buf[b / 8] &= static_cast<unsigned char>(~(0x80 >> (b % 8)));
  char out[INET6_ADDRSTRLEN];
  inet_ntop(family, buf, out, sizeof(out));
  return std::string(out) + "/" + std::to_string(len);
}

class AddressProvider : public FormatProvider {
public:
  enum class Part { WithPort, WithoutPort, JustPort };
  using Fn = std::function<std::optional<std::string>(const StreamInfo&)>;
  AddressProvider(Fn fn, Part part, std::optional<int> mask = std::nullopt) : fn_(std::move(fn)), part_(part), mask_(mask) {}
  std::optional<std::string> format(const FormatContext&, const StreamInfo& i) const override {
    auto a = fn_(i);
    if (!a || a->empty()) return std::nullopt;
    switch (part_) {
    case Part::WithPort: return *a;
    case Part::WithoutPort: return mask_ ? masked(withoutPort(*a), *mask_) : withoutPort(*a);
    case Part::JustPort: {
      auto p = portOf(*a);
      return p ? std::to_string(*p) : "";
    }
    }
    return std::nullopt;
  }
  FormatValue formatValue(const FormatContext& c, const StreamInfo& i) const override {
    if (part_ == Part::JustPort) {
      auto a = fn_(i);
      if (!a || a->empty()) return FormatValue{};
      auto p = portOf(*a);
      return p ? FormatValue{std::to_string(*p)} : FormatValue{};
    }
    return FormatProvider::formatValue(c, i);
  }

private:
  Fn fn_;
  Part part_;
  std::optional<int> mask_;
};

// ResponseFlagUtils long names, in CoreResponseFlag order (source/common/stream_info/utility.h).
const char* longFlagName(std::string_view f) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"LH", "FailedLocalHealthCheck"}, {"UH", "NoHealthyUpstream"}, {"UT", "UpstreamRequestTimeout"},
      {"LR", "LocalReset"}, {"UR", "UpstreamRemoteReset"}, {"UF", "UpstreamConnectionFailure"},
      {"UC", "UpstreamConnectionTermination"}, {"UO", "UpstreamOverflow"}, {"NR", "NoRouteFound"},
      {"DI", "DelayInjected"}, {"FI", "FaultInjected"}, {"RL", "RateLimited"},
      {"UAEX", "UnauthorizedExternalService"}, {"RLSE", "RateLimitServiceError"},
      {"DC", "DownstreamConnectionTermination"}, {"URX", "UpstreamRetryLimitExceeded"},
      {"SI", "StreamIdleTimeout"}, {"IH", "InvalidEnvoyRequestHeaders"}, {"DPE", "DownstreamProtocolError"},
      {"UMSDR", "UpstreamMaxStreamDurationReached"}, {"RFCF", "ResponseFromCacheFilter"},
      {"NFCF", "NoFilterConfigFound"}, {"DT", "DurationTimeout"}, {"UPE", "UpstreamProtocolError"},
      {"NC", "NoClusterFound"}, {"OM", "OverloadManagerTerminated"}, {"DF", "DnsResolutionFailed"},
      {"DO", "DropOverload"}, {"DR", "DownstreamRemoteReset"}, {"UDO", "UnconditionalDropOverload"}};
  for (auto& [s, l] : kNames) {
    if (f == s) return l;
  }
  return "";
}

const char* accessLogTypeName(AccessLogType t) {
  switch (t) {
  case AccessLogType::NotSet: return "NotSet";
  case AccessLogType::DownstreamStart: return "DownstreamStart";
  case AccessLogType::DownstreamPeriodic: return "DownstreamPeriodic";
  case AccessLogType::DownstreamEnd: return "DownstreamEnd";
  }
  return "NotSet";
}

// Http::Utility::PercentEncoding::urlDecodeQueryParameter.
std::string urlDecodeQuery(std::string_view s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '+') out.push_back(' ');
    else if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
      i += 2;
    } else out.push_back(s[i]);
  }
  return out;
}

std::optional<Clock::duration> since(const std::optional<Clock::time_point>& end, Clock::time_point start) {
  if (!end) return std::nullopt;
  return *end - start;
}

FormatProviderPtr makeProvider(const bootstrap::FormatToken& t) {
  if (t.command.empty()) return std::make_unique<PlainString>(t.text);
  const std::string& c = t.command;
  const auto& a = t.args;
  auto arg = [&](size_t k) { return k < a.size() ? a[k] : std::string(); };
  using S = StringProvider;
  using A = AddressProvider;
  auto mask = [&]() -> std::optional<int> {
    if (a.empty()) return std::nullopt;
    return std::stoi(a[0]);
  };

  if (c == "REQ" || c == "REQUEST_HEADER" || c == "STREAM_INFO_REQ")
    return std::make_unique<HeaderProvider>(HeaderProvider::Which::Request, arg(0), arg(1), t.max_length);
  if (c == "RESP" || c == "RESPONSE_HEADER")
    return std::make_unique<HeaderProvider>(HeaderProvider::Which::Response, arg(0), arg(1), t.max_length);
  if (c == "TRAILER" || c == "RESPONSE_TRAILER")
    return std::make_unique<HeaderProvider>(HeaderProvider::Which::Trailers, arg(0), arg(1), t.max_length);
  if (c == "START_TIME") return std::make_unique<TimeProvider>(arg(0), false, false);
  if (c == "START_TIME_LOCAL") return std::make_unique<TimeProvider>(arg(0), true, false);
  if (c == "EMIT_TIME") return std::make_unique<TimeProvider>(arg(0), false, true);
  if (c == "EMIT_TIME_LOCAL") return std::make_unique<TimeProvider>(arg(0), true, true);

  if (c == "PROTOCOL")
    return std::make_unique<S>([](const FormatContext&, const StreamInfo& i) -> std::optional<std::string> {
      return i.protocol == 0 ? "HTTP/1.0" : "HTTP/1.1";
    });
  if (c == "UPSTREAM_PROTOCOL")
    return std::make_unique<S>([](const FormatContext&, const StreamInfo& i) -> std::optional<std::string> {
      if (!i.upstream_remote_address) return std::nullopt;
      return "HTTP/1.1";
    });
  if (c == "RESPONSE_CODE")
    return std::make_unique<NumberProvider>([](const FormatContext&, const StreamInfo& i) -> uint64_t {
      return i.response_code.value_or(0);
    });
  if (c == "RESPONSE_CODE_DETAILS") {
    const bool allow_ws = arg(0) == "ALLOW_WHITESPACES";
    return std::make_unique<S>([allow_ws](const FormatContext&, const StreamInfo& i) -> std::optional<std::string> {
      if (!i.response_code_details) return std::nullopt;
      std::string d = *i.response_code_details;
      if (!allow_ws) {
        for (char& ch : d) {
          if (ch == ' ' || ch == '\t' || ch == '\f' || ch == '\v' || ch == '\n' || ch == '\r') ch = '_';
        }
      }
      return d;
    });
  }
  if (c == "RESPONSE_FLAGS" || c == "RESPONSE_FLAGS_LONG") {
    const bool long_names = c == "RESPONSE_FLAGS_LONG";
    return std::make_unique<S>([long_names](const FormatContext&, const StreamInfo& i) -> std::optional<std::string> {
      if (i.response_flag_list.empty()) return std::string("-");
      std::string out;
      for (auto& f : i.response_flag_list) {
        if (!out.empty()) out += ",";
        out += long_names ? longFlagName(f) : f;
      }
      return out;
    });
  }
  if (c == "CUSTOM_FLAGS")
    return std::make_unique<S>([](const FormatContext&, const StreamInfo&) -> std::optional<std::string> { return std::string(); });
  if (c == "BYTES_RECEIVED")
    return std::make_unique<NumberProvider>([](const FormatContext&, const StreamInfo& i) { return i.bytes_received; });
  if (c == "BYTES_SENT")
    return std::make_unique<NumberProvider>([](const FormatContext&, const StreamInfo& i) { return i.bytes_sent; });
  if (c == "DURATION")
    return std::make_unique<DurationProvider>([](const StreamInfo& i) -> std::optional<Clock::duration> {
      // StreamInfo::currentDuration: to the end of the stream, or now.
      return (i.completed ? *i.completed : Clock::now()) - i.start_steady;
    });
  if (c == "REQUEST_DURATION")
    return std::make_unique<DurationProvider>([](const StreamInfo& i) { return since(i.last_downstream_rx, i.start_steady); });
  if (c == "RESPONSE_DURATION")
    return std::make_unique<DurationProvider>([](const StreamInfo& i) { return since(i.first_upstream_rx, i.start_steady); });
  if (c == "RESPONSE_TX_DURATION")
    return std::make_unique<DurationProvider>([](const StreamInfo& i) -> std::optional<Clock::duration> {
      if (!i.last_downstream_tx || !i.first_upstream_rx) return std::nullopt;
      return *i.last_downstream_tx - *i.first_upstream_rx;
    });

  auto upstream = [](const StreamInfo& i) { return i.upstream_remote_address; };
  if (c == "UPSTREAM_HOST" || c == "UPSTREAM_REMOTE_ADDRESS" || c == "UPSTREAM_HOST_NAME")
    return std::make_unique<A>(upstream, A::Part::WithPort);
  if (c == "UPSTREAM_HOST_NAME_WITHOUT_PORT") return std::make_unique<A>(upstream, A::Part::WithoutPort);
  if (c == "UPSTREAM_REMOTE_ADDRESS_WITHOUT_PORT") return std::make_unique<A>(upstream, A::Part::WithoutPort, mask());
  if (c == "UPSTREAM_REMOTE_PORT") return std::make_unique<A>(upstream, A::Part::JustPort);
  if (c == "UPSTREAM_HOSTS_ATTEMPTED" || c == "UPSTREAM_HOSTS_ATTEMPTED_WITHOUT_PORT") {
    const bool no_port = c == "UPSTREAM_HOSTS_ATTEMPTED_WITHOUT_PORT";
    return std::make_unique<S>([no_port](const FormatContext&, const StreamInfo& i) -> std::optional<std::string> {
      if (i.upstream_hosts_attempted.empty()) return std::nullopt;
      std::string out;
      for (auto& h : i.upstream_hosts_attempted) {
        if (!out.empty()) out += ",";
        out += no_port ? withoutPort(h) : h;
      }
      return out;
    });
  }
  if (c == "UPSTREAM_CLUSTER" || c == "UPSTREAM_CLUSTER_RAW")
    return std::make_unique<S>([](const FormatContext&, const StreamInfo& i) -> std::optional<std::string> {
      if (!i.upstream_cluster || i.upstream_cluster->empty()) return std::nullopt;
      return *i.upstream_cluster;
    });
  if (c == "UPSTREAM_REQUEST_ATTEMPT_COUNT")
    return std::make_unique<NumberProvider>([](const FormatContext&, const StreamInfo& i) -> uint64_t {
      return i.attempt_count.value_or(0);
    });
  if (c == "UPSTREAM_TRANSPORT_FAILURE_REASON")
    return std::make_unique<S>([](const FormatContext&, const StreamInfo& i) -> std::optional<std::string> {
      if (i.upstream_transport_failure_reason.empty()) return std::nullopt;
      return i.upstream_transport_failure_reason;
    });

  auto remote = [](const StreamInfo& i) -> std::optional<std::string> { return i.downstream.remote_str; };
  auto local = [](const StreamInfo& i) -> std::optional<std::string> { return i.downstream.local_str; };
  // No PROXY protocol or XFF trust: the direct addresses are the addresses.
  if (c == "DOWNSTREAM_REMOTE_ADDRESS" || c == "DOWNSTREAM_DIRECT_REMOTE_ADDRESS") return std::make_unique<A>(remote, A::Part::WithPort);
  if (c == "DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT" || c == "DOWNSTREAM_DIRECT_REMOTE_ADDRESS_WITHOUT_PORT")
    return std::make_unique<A>(remote, A::Part::WithoutPort, mask());
  if (c == "DOWNSTREAM_REMOTE_PORT" || c == "DOWNSTREAM_DIRECT_REMOTE_PORT") return std::make_unique<A>(remote, A::Part::JustPort);
  if (c == "DOWNSTREAM_LOCAL_ADDRESS" || c == "DOWNSTREAM_DIRECT_LOCAL_ADDRESS") return std::make_unique<A>(local, A::Part::WithPort);
  if (c == "DOWNSTREAM_LOCAL_ADDRESS_WITHOUT_PORT" || c == "DOWNSTREAM_DIRECT_LOCAL_ADDRESS_WITHOUT_PORT")
    return std::make_unique<A>(local, A::Part::WithoutPort, mask());
  if (c == "DOWNSTREAM_LOCAL_PORT" || c == "DOWNSTREAM_DIRECT_LOCAL_PORT") return std::make_unique<A>(local, A::Part::JustPort);
  if (c == "CONNECTION_ID")
    return std::make_unique<NumberProvider>([](const FormatContext&, const StreamInfo& i) { return i.downstream.id; });

  if (c == "ROUTE_NAME")
    return std::make_unique<S>([](const FormatContext&, const StreamInfo& i) -> std::optional<std::string> {
      if (i.route_name.empty()) return std::nullopt;
      return i.route_name;
    });
  if (c == "VIRTUAL_CLUSTER_NAME")
    return std::make_unique<S>([](const FormatContext&, const StreamInfo&) -> std::optional<std::string> { return std::nullopt; });
  if (c == "HOSTNAME") {
    char name[256] = {0};
    std::optional<std::string> host;
    if (gethostname(name, sizeof(name) - 1) == 0) host = name;
    return std::make_unique<S>([host](const FormatContext&, const StreamInfo&) { return host; });
  }
  if (c == "UNIQUE_ID")
    return std::make_unique<S>([](const FormatContext&, const StreamInfo&) -> std::optional<std::string> { return uuid4(); });
  if (c == "STREAM_ID")
    // The stream id provider is the x-request-id (HttpStreamIdProviderImpl).
    return std::make_unique<S>([](const FormatContext&, const StreamInfo& i) -> std::optional<std::string> {
      if (i.request_id.empty()) return std::nullopt;
      return i.request_id;
    });
  if (c == "FILTER_STATE") return std::make_unique<FilterStateProvider>(a, t.max_length);
  if (c == "DYNAMIC_METADATA") return std::make_unique<MetadataProvider>(a, t.max_length);
  if (c == "ENVIRONMENT") {
    // EnvironmentFormatter: read once; "-" when unset.
    const char* v = getenv(arg(0).c_str());
    std::string value = v != nullptr ? v : "-";
    if (v != nullptr) truncate(value, t.max_length);
    return std::make_unique<PlainString>(value);
  }
  if (c == "LOCAL_REPLY_BODY")
    return std::make_unique<S>([](const FormatContext& ctx, const StreamInfo&) -> std::optional<std::string> {
      return std::string(ctx.local_reply_body);
    });
  if (c == "ACCESS_LOG_TYPE")
    return std::make_unique<S>([](const FormatContext& ctx, const StreamInfo&) -> std::optional<std::string> {
      return std::string(accessLogTypeName(ctx.access_log_type));
    });
  if (c == "REQUEST_HEADERS_BYTES" || c == "RESPONSE_HEADERS_BYTES" || c == "RESPONSE_TRAILERS_BYTES") {
    const int which = c == "REQUEST_HEADERS_BYTES" ? 0 : c == "RESPONSE_HEADERS_BYTES" ? 1 : 2;
    return std::make_unique<NumberProvider>([which](const FormatContext& ctx, const StreamInfo&) -> uint64_t {
      const HeaderMap* h = which == 0 ? ctx.request_headers : which == 1 ? ctx.response_headers : ctx.response_trailers;
      return h ? h->byteSize() : 0;
    });
  }
  if (c == "QUERY_PARAM") {
    const std::string key = arg(0);
    const auto max = t.max_length;
    return std::make_unique<S>([key, max](const FormatContext& ctx, const StreamInfo&) -> std::optional<std::string> {
      if (ctx.request_headers == nullptr) return std::nullopt;
      std::string_view path = ctx.request_headers->path();
      size_t q = path.find('?');
      if (q == std::string_view::npos) return std::nullopt;
      std::string_view query = path.substr(q + 1);
      while (!query.empty()) {
        size_t amp = query.find('&');
        std::string_view part = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
        size_t eq = part.find('=');
        if (urlDecodeQuery(part.substr(0, eq)) == key) {
          std::string v = eq == std::string_view::npos ? "" : urlDecodeQuery(part.substr(eq + 1));
          truncate(v, max);
          return v;
        }
      }
      return std::nullopt;
    });
  }
  if (c == "PATH") {
    const bool with_query = arg(0) != "NQ";
    const std::string option = arg(1).empty() ? "ORIG_OR_PATH" : arg(1);
    const auto max = t.max_length;
    return std::make_unique<S>([with_query, option, max](const FormatContext& ctx, const StreamInfo&) -> std::optional<std::string> {
      if (ctx.request_headers == nullptr) return std::nullopt;
      const std::string* orig = ctx.request_headers->get("x-envoy-original-path");
      std::string path;
      if (option == "PATH" || (option == "ORIG_OR_PATH" && (orig == nullptr || orig->empty()))) {
        path = std::string(ctx.request_headers->path());
      } else if (orig != nullptr) {
        path = *orig;
      }
      if (path.empty()) return std::nullopt;
      if (!with_query) path = path.substr(0, path.find('?'));
      truncate(path, max);
      return path;
    });
  }
  throw std::runtime_error("access log format: command %" + c + "% is not implemented by moe-host");
}

} // namespace

Formatter::Formatter(const bootstrap::Format& f)
    : json_(f.kind == bootstrap::Format::Kind::Json), omit_empty_(f.omit_empty_values) {
  for (auto& t : f.text) text_.push_back(makeProvider(t));
  for (auto& p : f.json) {
    JsonPiece piece;
    if (p.raw) piece.raw = *p.raw;
    for (auto& t : p.tmpl) piece.providers.push_back(makeProvider(t));
    pieces_.push_back(std::move(piece));
  }
}

std::string Formatter::format(const FormatContext& c, const StreamInfo& i) const {
  std::string out;
  if (!json_) {
    // FormatterImpl::format.
    for (auto& p : text_) {
      auto v = p->format(c, i);
      if (v) out += *v;
      else if (!omit_empty_) out += "-";
    }
    return out;
  }
  // JsonFormatterImpl::format.
  for (auto& piece : pieces_) {
    if (piece.providers.empty()) {
      out += piece.raw;
      continue;
    }
    if (piece.providers.size() == 1) {
      out += piece.providers[0]->formatValue(c, i).json;
      continue;
    }
    out.push_back('"');
    for (auto& p : piece.providers) {
      auto v = p->format(c, i);
      if (v) out += jsonEscape(*v);
      else if (!omit_empty_) out += "-";
    }
    out.push_back('"');
  }
  out.push_back('\n');
  return out;
}

// Envoy's Random::uuid(): version 4, RFC 4122 variant (x-request-id and %UNIQUE_ID%).
// Formatted with a hex table as Envoy does (source/common/common/random_generator.cc,
// RandomUtility::uuid), not snprintf: every request makes one, and snprintf's
// format parsing cost 6.3k instructions a request under callgrind, 5% of make
// bench's router-only figure, which Envoy does not spend. Envoy's bytes come
// from BoringSSL's RAND_bytes in 2 KB batches; here a thread-local mt19937_64
// (under 0.1k instructions a request).
std::string uuid4() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  uint64_t a = rng(), b = rng();
  unsigned char bytes[16];
  for (int i = 0; i < 8; i++) {
    bytes[i] = static_cast<unsigned char>(a >> (8 * i));
    bytes[8 + i] = static_cast<unsigned char>(b >> (8 * i));
  }
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x40);
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(36, '-'); // the dashes at 8, 13, 18 and 23 stay
  size_t at = 0;
  for (int i = 0; i < 16; i++) {
    if (at == 8 || at == 13 || at == 18 || at == 23) at++;
    out[at++] = hex[bytes[i] >> 4];
    out[at++] = hex[bytes[i] & 0x0f];
  }
  return out;
}

} // namespace moe

// Envoy's substitution formatter (source/common/formatter: substitution_formatter.cc,
// stream_info_formatter.cc, http_specific_formatter.cc) over moe-host's StreamInfo: access log
// lines and the %...% values of *_headers_to_add. The format string itself was parsed by
// moectl (compiled-bootstrap.md "Formats"); here each token becomes a provider.
//   text:  providers' strings concatenated, "-" for a missing value (nothing with
//          omit_empty_values) -- FormatterImpl::format
//   json:  raw pieces and templates; a template of one command keeps the value's type (number,
//          string, object, null), several make a string -- JsonFormatterImpl::format
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap.h"
#include "header_map.h"
#include "stream_info.h"

namespace moe {

// Formatter::Context: what a formatter sees besides the stream info.
struct FormatContext {
  const HeaderMap* request_headers = nullptr;
  const HeaderMap* response_headers = nullptr;
  const HeaderMap* response_trailers = nullptr;
  std::string_view local_reply_body;
  AccessLogType access_log_type = AccessLogType::NotSet;
};

// A formatted value for JSON output (Protobuf::Value, reduced): json is the serialized value
// (a string is quoted and escaped), "null" when missing.
struct FormatValue {
  std::string json = "null";
  bool missing() const { return json == "null"; }
};

class FormatProvider {
public:
  virtual ~FormatProvider() = default;
  virtual std::optional<std::string> format(const FormatContext& c, const StreamInfo& i) const = 0;
  virtual FormatValue formatValue(const FormatContext& c, const StreamInfo& i) const;
};
using FormatProviderPtr = std::unique_ptr<FormatProvider>;

class Formatter {
public:
  // Throws std::runtime_error for a command the host does not implement (moectl refuses them).
  explicit Formatter(const bootstrap::Format& format);
  std::string format(const FormatContext& c, const StreamInfo& i) const;

private:
  struct JsonPiece {
    std::string raw;
    std::vector<FormatProviderPtr> providers;  // empty: raw
  };
  bool json_;
  bool omit_empty_;
  std::vector<FormatProviderPtr> text_;
  std::vector<JsonPiece> pieces_;
};

// Json::sanitize: the string's JSON escapes, without the quotes.
std::string jsonEscape(std::string_view s);

// A JSON string literal.
std::string jsonQuote(std::string_view s);

// A random version-4 UUID, as Envoy's Random::uuid().
std::string uuid4();

} // namespace moe

#include "http1_codec.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <climits>
#include <ctime>
#include <cstring>

#include "logger.h"
#include "server.h"
#include "stats.h"

namespace moe {

namespace {

// Envoy's default max_request_headers_count (http_connection_manager.proto common_http_protocol_options).
constexpr uint32_t kMaxHeadersCount = 100;
// The upstream side's defaults: the cluster's max_headers_count (DEFAULT_MAX_HEADERS_COUNT) and,
// with max_response_headers_kb unset, MAX_RESPONSE_HEADERS_KB (codec_impl.h:32) for the whole
// header block as Balsa counts it (its max_header_length).
constexpr uint32_t kMaxResponseHeadersCount = 100;
constexpr uint32_t kMaxResponseHeadersBytes = 80 * 1024;
// How long a closing connection waits for the peer's FIN after our shutdown(SHUT_WR), so that
// unread request bytes do not turn our close into a RST that destroys the response in flight.
constexpr std::chrono::milliseconds kLingerTimeout{1000};

// True when a comma separated header value lists token (case-insensitive), e.g. "keep-alive, close".
bool hasToken(std::string_view value, std::string_view token) {
  size_t pos = 0;
  while (pos <= value.size()) {
    size_t comma = value.find(',', pos);
    std::string_view item = value.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (iequals(item, token)) return true;
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return false;
}

std::string_view trimWhitespace(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

// Hop-by-hop headers the codec consumes instead of passing to the connection manager
// (Envoy removes chunked transfer-encoding in the codec and connection headers in the HCM,
// conn_manager_utility.cc mutateRequestHeaders).
bool isHopByHop(std::string_view key) {
  return key == "transfer-encoding" || key == "connection" || key == "keep-alive" ||
         key == "proxy-connection" || key == "upgrade";
}

Gauge& activeConnections() {
  static Gauge& g = stats().gauge("moe_host.downstream_cx_active");
  return g;
}

// "http://host:port/path?q" -> scheme "http", authority "host:port", path "/path?q" ("/" when
// absent). Only http and https are valid schemes (Utility::schemeIsValid).
bool splitAbsoluteUrl(const std::string& url, std::string* scheme, std::string* authority, std::string* path) {
  size_t sep = url.find("://");
  if (sep == std::string::npos || sep == 0) return false;
  std::string s = lowerCase(std::string_view(url).substr(0, sep));
  if (s != "http" && s != "https") return false;
  size_t host_start = sep + 3;
  size_t host_end = url.find_first_of("/?", host_start);
  std::string host = url.substr(host_start, host_end == std::string::npos ? std::string::npos : host_end - host_start);
  if (host.empty() || host.find('@') != std::string::npos) return false;
  std::string rest = host_end == std::string::npos ? "" : url.substr(host_end);
  if (rest.empty() || rest[0] == '?') rest = "/" + rest;
  *scheme = s;
  *authority = host;
  *path = rest;
  return true;
}

bool statusHasNoBody(int status) { return (status >= 100 && status < 200) || status == 204 || status == 304; }

void appendHeaderLine(std::string& out, std::string_view k, std::string_view v) {
  // Callers only pass entries that passed writableHeader() or constants.
  out.append(k);
  out.append(": ");
  out.append(v);
  out.append("\r\n");
}

// http_parser_pause asserts unless the parser is OK or already paused; after an error the
// parser stops by itself, so there is nothing to pause.
void pauseParser(http_parser* p) {
  const auto err = HTTP_PARSER_ERRNO(p);
  if (err == HPE_OK || err == HPE_PAUSED) http_parser_pause(p, 1);
}

} // namespace

const char* reasonPhrase(int status) {
  if (status < 100 || status > 599) return "Unknown";
  const char* s = http_status_str(static_cast<enum http_status>(status));
  return (s == nullptr || strcmp(s, "<unknown>") == 0) ? "Unknown" : s;
}

// http_parser 2.9.4 marks a message as using Transfer-Encoding (uses_transfer_encoding) as soon
// as a header name *begins* with "transfer-encoding": "Transfer-Encodingt: x" then fails a
// request (HPE_INVALID_TRANSFER_ENCODING, answered 501; HPE_UNEXPECTED_CONTENT_LENGTH next to a
// Content-Length, 400) and fails a response that has a Content-Length. Envoy's codec (balsa)
// matches the whole name, so such a header is an ordinary one. Called with each value of the
// header section, when its name is complete: the flag stays only once a header named exactly
// transfer-encoding was seen in this message (seen: reset at each message).
void matchTransferEncodingName(http_parser& p, std::string_view field, bool& seen) {
  if (iequals(field, "transfer-encoding")) {
    seen = true;
  } else if (!seen) {
    p.uses_transfer_encoding = 0;
  }
}

bool validHeaderValue(std::string_view v) {
  for (char c : v) {
    if (c == '\0' || c == '\r' || c == '\n') return false;
  }
  return true;
}

// RFC 9110 tchar as a table, as http_parser's and Envoy's header-name checks keep it: libc's
// isalnum is a call per byte on every header of every message.
constexpr std::array<bool, 256> kTokenChar = [] {
  std::array<bool, 256> t{};
  for (int c = '0'; c <= '9'; c++) t[c] = true;
  for (int c = 'a'; c <= 'z'; c++) t[c] = t[c - 'a' + 'A'] = true;
  for (char c : std::string_view("!#$%&'*+-.^_`|~")) t[static_cast<unsigned char>(c)] = true;
  return t;
}();

bool validHeaderName(std::string_view k) {
  if (!k.empty() && k[0] == ':') {
    k.remove_prefix(1);
    if (k.empty()) return false;
  }
  for (char c : k) {
    if (!kTokenChar[static_cast<unsigned char>(c)]) return false;
  }
  return true;
}

namespace {
// oghttp2 HeaderValidator::IsValidHeaderValue with obs-text allowed (HeaderUtility::
// headerValueIsValid): HTAB, SP, visible ASCII and 0x80-0xff.
bool strictHeaderValue(std::string_view v) {
  for (char c : v) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u == '\t' || (u >= 0x20 && u != 0x7f)) continue;
    return false;
  }
  return true;
}

// JsonEscaper::escapeString for the key shown in the error (it may hold control characters).
std::string escapeKey(std::string_view k) {
  std::string out;
  for (char c : k) {
    const unsigned char u = static_cast<unsigned char>(c);
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      if (u < 0x20) {
        char buf[8];
        snprintf(buf, sizeof(buf), "\\u%04x", u);
        out += buf;
      } else {
        out += c;
      }
    }
  }
  return out;
}
} // namespace

std::string checkRequestHeadersForUpstream(const HeaderMap& headers) {
  if (headers.get(":method") == nullptr) return "missing required header: :method";
  if (headers.get(":path") == nullptr) return "missing required header: :path";
  for (auto& [k, v] : headers.entries()) {
    if (!validHeaderName(k)) return "invalid header name: " + escapeKey(k);
    if (!strictHeaderValue(v)) return "invalid header value for: " + escapeKey(k);
  }
  return "";
}

std::string httpDate() {
  static const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  time_t now = time(nullptr);
  struct tm tm;
  gmtime_r(&now, &tm);
  char buf[64];
  snprintf(buf, sizeof(buf), "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[tm.tm_wday], tm.tm_mday,
           kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

void appendChunk(std::string& out, std::string_view data) {
  if (data.empty()) return;  // an empty chunk would be the last-chunk marker
  char len[32];
  int n = snprintf(len, sizeof(len), "%zx\r\n", data.size());
  out.append(len, n);
  out.append(data);
  out.append("\r\n");
}

void appendLastChunk(std::string& out, const HeaderMap* trailers) {
  out.append("0\r\n");
  if (trailers != nullptr) {
    for (auto& [k, v] : trailers->entries()) {
      if (!k.empty() && k[0] == ':') continue;
      if (!writableHeader(k, v)) {
        MOE_LOG(Warn, "http1", "dropping trailer with an invalid name or value");
        continue;
      }
      appendHeaderLine(out, k, v);
    }
  }
  out.append("\r\n");
}

// =============================================================================================
// Server side
// =============================================================================================

// The ResponseEncoder of one request. Outlives the request in the deferred-delete list, with
// conn_ cleared, so a connection manager holding a stale reference finds an inert object.
class ServerConnection::ActiveRequest : public ResponseEncoder {
public:
  explicit ActiveRequest(ServerConnection* conn) : conn_(conn), info_(conn->info_) {}

  void encodeHeaders(const HeaderMap& headers, bool end_stream) override {
    if (conn_ == nullptr || response_started_) return;
    response_started_ = true;
    const int status = headers.status();
    std::string out;
    out.reserve(256);
    out.append("HTTP/1.1 ");
    out.append(std::to_string(status));
    out.push_back(' ');
    out.append(reasonPhrase(status));
    out.append("\r\n");
    bool saw_content_length = false;
    // The response that accepts an upgrade (101 with upgrade and "connection: upgrade", to a
    // request the codec read as an upgrade): its connection and upgrade headers are written as
    // they are (conn_manager_utility.cc:695-710 keeps them), and what follows is the other
    // protocol's bytes, unframed (codec_impl.cc:223-231: no chunking for upgrades).
    upgraded_ = conn_->upgrade_payload_ && status == 101 && isUpgradeRequest(headers);
    for (auto& [k, v] : headers.entries()) {
      if (k.empty() || k[0] == ':') continue;
      if (k == "connection" && upgraded_) {
        if (writableHeader(k, v)) appendHeaderLine(out, k, v);
        continue;
      }
      if (k == "connection") {
        if (hasToken(v, "close")) close_requested_ = true;
        continue;  // the codec writes its own connection header below
      }
      if (k == "transfer-encoding") continue;  // framing is the codec's decision
      if (!writableHeader(k, v)) {
        // Never let a CR/LF from a filter split the response, in the name or the value
        // (Envoy's HeaderString refuses such strings before they reach the codec).
        MOE_LOG(Warn, "http1", "dropping response header with an invalid name or value");
        continue;
      }
      if (k == "content-length") saw_content_length = true;
      appendHeaderLine(out, k, v);
    }
    // Framing rules of Envoy's StreamEncoderImpl::encodeHeadersBase (codec_impl.cc:173-233).
    no_body_ = !upgraded_ && (head_ || statusHasNoBody(status));
    if (saw_content_length) {
      chunked_ = false;
    } else if (statusHasNoBody(status)) {
      chunked_ = false;
    } else if (end_stream) {
      if (!head_) appendHeaderLine(out, "content-length", "0");
      chunked_ = false;
    } else {
      appendHeaderLine(out, "transfer-encoding", "chunked");
      chunked_ = !head_;  // HEAD: informational header only, no chunked body
    }
    // A response ending while the request body is still arriving closes the connection
    // (conn_manager_impl.cc doEndStream); say so up front when we already know it.
    // Not on an upgrade's 101: the bytes after it are no longer HTTP/1.1
    // (conn_manager_impl.cc:2017-2023, is_tunneling_); the connection closes when it ends.
    if (!upgraded_ && (conn_->shouldCloseAfterResponse() || (end_stream && !request_complete_))) {
      wrote_close_ = true;
      appendHeaderLine(out, "connection", "close");
    }
    out.append("\r\n");
    conn_->write(out);
    if (end_stream) endResponse();
  }

  void encodeData(Buffer& data, bool end_stream) override {
    if (conn_ == nullptr || !response_started_ || response_complete_) return;
    if (!no_body_ && !data.empty()) {
      if (chunked_) {
        std::string framed;
        framed.reserve(data.length() + 16);
        appendChunk(framed, data.view());
        conn_->write(framed);
      } else {
        conn_->write(data.view());
      }
    }
    data.drainAll();
    if (end_stream) {
      if (chunked_) {
        std::string last;
        appendLastChunk(last, nullptr);
        conn_->write(last);
      }
      endResponse();
    }
  }

  void encodeTrailers(const HeaderMap& trailers) override {
    if (conn_ == nullptr || !response_started_ || response_complete_) return;
    // Trailers only exist on the wire with chunked encoding; otherwise Envoy drops them.
    if (chunked_) {
      std::string last;
      appendLastChunk(last, &trailers);
      conn_->write(last);
    }
    endResponse();
  }

  void resetStream() override {
    if (conn_ == nullptr) return;
    conn_->resetFromEncoder();
  }
  void setCloseAfterResponse() override { close_requested_ = true; }
  const ConnectionInfo& connectionInfo() const override { return info_; }
  uint64_t requestWireBytes() const override { return wire_bytes_; }
  int protocol() const override { return protocol_; }
  void readDisable(bool disable) override {
    if (conn_ == nullptr) return;
    if (disable) {
      read_disable_calls_++;
    } else {
      if (read_disable_calls_ == 0) return;
      read_disable_calls_--;
    }
    conn_->readDisable(disable);
  }

  void endResponse() {
    response_complete_ = true;
    conn_->onResponseComplete();
  }

  ServerConnection* conn_;  // nullptr once the stream is over: every method becomes a no-op
  ConnectionInfo info_;     // a copy, so connectionInfo() stays valid after the connection dies
  RequestDecoder* decoder_ = nullptr;
  HeaderMapPtr pending_headers_;  // bodiless request: decodeHeaders waits for message complete
  bool head_ = false;
  bool request_complete_ = false;
  bool response_started_ = false;
  bool response_complete_ = false;
  bool chunked_ = false;
  bool no_body_ = false;
  bool close_requested_ = false;
  bool wrote_close_ = false;
  bool upgraded_ = false;  // a 101 accepted the upgrade: the response body is the raw pipe
  int protocol_ = 1;
  uint64_t wire_bytes_ = 0;
  uint32_t read_disable_calls_ = 0;  // undone when the stream goes away (codec_impl.h:45-50)
};

// http_parser C callbacks → ServerConnection methods.
struct ServerParserCallbacks {
  static ServerConnection* self(http_parser* p) { return static_cast<ServerConnection*>(p->data); }
  static int onMessageBegin(http_parser* p) { return self(p)->onMessageBegin(); }
  static int onUrl(http_parser* p, const char* at, size_t n) { return self(p)->onUrl(at, n); }
  static int onHeaderField(http_parser* p, const char* at, size_t n) { return self(p)->onHeaderField(at, n); }
  static int onHeaderValue(http_parser* p, const char* at, size_t n) { return self(p)->onHeaderValue(at, n); }
  static int onHeadersComplete(http_parser* p) { return self(p)->onHeadersComplete(); }
  static int onBody(http_parser* p, const char* at, size_t n) { return self(p)->onBody(at, n); }
  static int onMessageComplete(http_parser* p) { return self(p)->onMessageComplete(); }

  static const http_parser_settings& settings() {
    static const http_parser_settings s = [] {
      http_parser_settings st;
      http_parser_settings_init(&st);
      st.on_message_begin = onMessageBegin;
      st.on_url = onUrl;
      st.on_header_field = onHeaderField;
      st.on_header_value = onHeaderValue;
      st.on_headers_complete = onHeadersComplete;
      st.on_body = onBody;
      st.on_message_complete = onMessageComplete;
      return st;
    }();
    return s;
  }
};

ServerConnection* ServerConnection::create(Dispatcher& dispatcher, int fd, const ConnectionInfo& info,
                                           HttpConnectionManagerFactory& factory, const Server& server,
                                           uint32_t read_limit_bytes,
                                           std::function<void(ServerConnection*)> on_closed) {
  return new ServerConnection(dispatcher, fd, info, factory, server, read_limit_bytes, std::move(on_closed));
}

ServerConnection::ServerConnection(Dispatcher& dispatcher, int fd, const ConnectionInfo& info,
                                   HttpConnectionManagerFactory& factory, const Server& server,
                                   uint32_t read_limit_bytes, std::function<void(ServerConnection*)> on_closed)
    : dispatcher_(dispatcher), info_(info), server_(server),
      max_headers_bytes_(factory.maxRequestHeadersBytes()), on_closed_(std::move(on_closed)),
      chunked_(*this, max_headers_bytes_), write_limit_(read_limit_bytes) {
  static Counter& cx_total = stats().counter("moe_host.downstream_cx_total");
  cx_total.inc();
  activeConnections().add(1);
  http_parser_init(&parser_, HTTP_REQUEST);
  parser_.data = this;
  bev_ = bufferevent_socket_new(dispatcher.base(), fd, BEV_OPT_CLOSE_ON_FREE);
  bufferevent_setcb(bev_, &ServerConnection::onReadCb, &ServerConnection::onWriteCb,
                    &ServerConnection::onEventCb, this);
  resume_timer_ = dispatcher.createTimer([this] { dispatchInput(); });
  linger_timer_ = dispatcher.createTimer([this] { closeConnection(false); });
  // Envoy's per_connection_buffer_limit_bytes bounds the connection's read buffer: reading
  // stops above it until the codec consumed the bytes (e.g. pipelined requests waiting).
  if (read_limit_bytes > 0) bufferevent_setwatermark(bev_, EV_READ, 0, read_limit_bytes);
  // The write callback runs whenever a write leaves at most half the limit unsent: the low
  // watermark (Envoy's WatermarkBuffer: low = high / 2), and the drained signal for closing.
  if (write_limit_ > 0) bufferevent_setwatermark(bev_, EV_WRITE, write_limit_ / 2, 0);
  callbacks_ = factory.createConnectionManager(dispatcher, info_);
  bufferevent_enable(bev_, EV_READ | EV_WRITE);
}

ServerConnection::~ServerConnection() {
  // The connection manager goes first: it may still reference the codec in its destructor.
  callbacks_.reset();
  resume_timer_.reset();
  linger_timer_.reset();
  if (bev_ != nullptr) bufferevent_free(bev_);
}

void ServerConnection::onReadCb(bufferevent*, void* arg) { static_cast<ServerConnection*>(arg)->onReadable(); }

void ServerConnection::onWriteCb(bufferevent*, void* arg) {
  auto* self = static_cast<ServerConnection*>(arg);
  // Called when the output buffer drained to the write low-watermark (half the limit) or below.
  self->checkWriteWatermarks();
  if (self->closed_) return;
  if (self->close_after_flush_ && !self->write_shutdown_) self->closeAfterFlush();
}

void ServerConnection::onEventCb(bufferevent*, short what, void* arg) {
  auto* self = static_cast<ServerConnection*>(arg);
  if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) self->onRemoteClose();
}

void ServerConnection::onReadable() {
  if (closed_) return;
  if (close_after_flush_) {
    // The connection is closing: whatever the client still sends is discarded.
    evbuffer_drain(bufferevent_get_input(bev_), evbuffer_get_length(bufferevent_get_input(bev_)));
    return;
  }
  dispatchInput();
}

void ServerConnection::onRemoteClose() {
  if (closed_) return;
  // Envoy resets an active HTTP/1 stream when the downstream closes, half-closed or not
  // (no half-close support on the downstream by default).
  closeConnection(true);
}

void ServerConnection::dispatchInput() {
  while (!closed_ && !close_after_flush_ && read_disable_count_ == 0) {
    // One request at a time: pipelined bytes stay in the input buffer until the response to
    // the current request is complete (codec_impl.cc pauses the parser on message complete).
    if (stream_ && stream_->request_complete_) break;
    evbuffer* in = bufferevent_get_input(bev_);
    if (evbuffer_get_length(in) == 0) break;
    if (upgrade_payload_) {
      // codec_impl.cc:617-625, 696-698 maybeDirectDispatch: the bytes after an upgrade
      // request's headers are the stream's body, as they come, never parsed as HTTP. A stream
      // that is over (a refused upgrade) gets none: they are dropped.
      const size_t len = evbuffer_get_length(in);
      if (stream_ && stream_->decoder_) {
        Buffer payload;
        payload.add(evbuffer_pullup(in, -1), len);
        evbuffer_drain(in, len);
        stream_->wire_bytes_ += len;
        dispatching_ = true;
        stream_->decoder_->decodeData(payload, false);
        dispatching_ = false;
        if (stream_done_pending_) {
          stream_done_pending_ = false;
          finishStream();
        }
        continue;
      }
      evbuffer_drain(in, len);
      break;
    }
    if (HTTP_PARSER_ERRNO(&parser_) == HPE_PAUSED) http_parser_pause(&parser_, 0);

    evbuffer_iovec vec;
    if (evbuffer_peek(in, -1, nullptr, &vec, 1) < 1) break;
    dispatching_ = true;
    const char* data = static_cast<const char*>(vec.iov_base);
    size_t n;
    if (reading_chunked_) {
      n = chunked_.execute(data, vec.iov_len);
      if (chunked_.error() != ChunkedDecoder::Error::None && error_status_ == 0) {
        // codec_impl.cc dispatchSlice: a parse error is a 400, trailers over the limit 431.
        error_status_ = chunked_.error() == ChunkedDecoder::Error::TrailersTooLong ? 431 : 400;
        MOE_LOG(Debug, "http1", "[C%lu] chunked body error: %s", static_cast<unsigned long>(info_.id),
                ChunkedDecoder::errorName(chunked_.error()));
      } else if (chunked_.done()) {
        reading_chunked_ = false;
        // Ready for the next request (http_parser stopped after this one's headers).
        http_parser_init(&parser_, HTTP_REQUEST);
        parser_.data = this;
        onRequestComplete();
      }
    } else {
      n = http_parser_execute(&parser_, &ServerParserCallbacks::settings(), data, vec.iov_len);
    }
    dispatching_ = false;
    if (closed_) return;  // the buffer is freed with the connection; nothing more to do
    evbuffer_drain(in, n);
    // Bytes of a request whose headers span several reads count once its stream exists.
    unclaimed_wire_bytes_ += n;
    if (stream_) {
      stream_->wire_bytes_ += unclaimed_wire_bytes_;
      unclaimed_wire_bytes_ = 0;
    }

    const auto err = reading_chunked_ ? HPE_OK : HTTP_PARSER_ERRNO(&parser_);
    if (error_status_ != 0 || (err != HPE_OK && err != HPE_PAUSED)) {
      int status = error_status_;
      if (status == 0) {
        if (err == HPE_HEADER_OVERFLOW) status = 431;
        else if (err == HPE_INVALID_TRANSFER_ENCODING) status = 501;  // codec_impl.cc:934
        else status = 400;
        MOE_LOG(Debug, "http1", "[C%lu] request parse error: %s", static_cast<unsigned long>(info_.id),
                http_errno_description(err));
      }
      sendErrorAndClose(status);
      return;
    }
    if (close_after_flush_) return;
    // Deliver the body bytes of this slice in one decodeData, as Envoy does per dispatch.
    if (!body_.empty()) flushBody(false);
    if (stream_done_pending_) {
      stream_done_pending_ = false;
      finishStream();
    }
  }
}

int ServerConnection::onMessageBegin() {
  url_.clear();
  field_.clear();
  value_.clear();
  last_was_value_ = false;
  headers_ = std::make_unique<HeaderMap>();
  processing_trailers_ = false;
  header_count_ = 0;
  error_status_ = 0;
  transfer_encoding_seen_ = false;
  // The stream starts with the request's first byte, as Envoy's ServerConnectionImpl::
  // onMessageBeginImpl calls newStream (codec_impl.cc), so the connection manager's
  // stream_idle_timeout, request_timeout and request_headers_timeout run while the headers
  // arrive (a client sending them a byte at a time is timed out).
  stream_ = std::make_unique<ActiveRequest>(this);
  stream_->decoder_ = &callbacks_->newStream(*stream_);
  // codec_impl.cc StreamEncoderImpl's constructor: a stream born on a connection still above
  // its high watermark is told at once.
  if (above_write_high_) stream_->decoder_->onAboveWriteBufferHighWatermark();
  return 0;
}

int ServerConnection::onUrl(const char* at, size_t len) {
  url_.append(at, len);
  if (url_.size() > max_headers_bytes_) return failRequest(431);
  return 0;
}

int ServerConnection::failRequest(int status) {
  error_status_ = status;
  return -1;  // any value other than 0 (1/2 on headers complete) makes http_parser stop with an error
}

int ServerConnection::onHeaderField(const char* at, size_t len) {
  if (last_was_value_) {
    if (!commitHeader()) return -1;
  }
  field_.append(at, len);
  // codec_impl.cc:598-613: limit counts the map plus the header being parsed.
  if (headers_->byteSize() + field_.size() + value_.size() > max_headers_bytes_) return failRequest(431);
  return 0;
}

int ServerConnection::onHeaderValue(const char* at, size_t len) {
  last_was_value_ = true;
  value_.append(at, len);
  if (!processing_trailers_) matchTransferEncodingName(parser_, field_, transfer_encoding_seen_);
  if (headers_->byteSize() + field_.size() + value_.size() > max_headers_bytes_) return failRequest(431);
  return 0;
}

bool ServerConnection::commitHeader() {
  last_was_value_ = false;
  if (field_.empty()) return true;
  if (++header_count_ > kMaxHeadersCount) {  // codec_impl.cc:570-577
    failRequest(431);
    return false;
  }
  // A name must be a token (codec_impl.cc / balsa: invalid characters -> 400). The system
  // http_parser is lenient here: "content-length : 5" frames the body by that length while the
  // name passed to the callbacks is "content-length ", and trailer names are not checked at all.
  if (field_.find(':') != std::string::npos || !validHeaderName(field_)) {
    failRequest(400);
    return false;
  }
  std::string_view value = trimWhitespace(value_);
  if (!validHeaderValue(value)) {
    failRequest(400);
    return false;
  }
  headers_->addCopy(lowerCase(field_), value);
  field_.clear();
  value_.clear();
  return true;
}

int ServerConnection::onHeadersComplete() {
  if (!commitHeader()) return -1;
  // codec_impl.cc:1176-1190: anything but HTTP/1.1 is treated as HTTP/1.0, refused with 426
  // unless accept_http_10 (not supported here).
  if (parser_.http_major != 1 || parser_.http_minor != 1) return failRequest(426);

  const std::string* te = headers_->get("transfer-encoding");
  const std::string* cl = headers_->get("content-length");
  if (te != nullptr && cl != nullptr) return failRequest(400);       // codec_impl.cc:915-926
  // codec_impl.cc:930-937. transfer-encoding is an inline header in Envoy: repeated fields are
  // joined with ',' ("chunked,chunked"), which is not "chunked" either.
  if (te != nullptr && (!iequals(*te, "chunked") || headers_->getAll("transfer-encoding").size() > 1))
    return failRequest(501);
  if (cl != nullptr) {
    for (auto& v : headers_->getAll("content-length")) {
      if (v != *cl) return failRequest(400);
    }
  }
  std::string authority, path = url_, scheme = "http";
  // Host is Envoy's inline :authority: a repeated field is appended with ','
  // (header_map_impl.cc insertByKey, delimiterByHeader), not dropped, and "a,b" is a valid
  // authority to HeaderUtility::authorityIsValid; the route and the upstream see both.
  for (auto& h : headers_->getAll("host")) {
    if (!authority.empty()) authority.push_back(',');
    authority.append(h);
  }
  const bool connect = parser_.method == HTTP_CONNECT;
  const bool origin_form = !url_.empty() && (url_[0] == '/' || (parser_.method == HTTP_OPTIONS && url_[0] == '*'));
  if (connect) {
    // codec_impl.cc handlePath: a CONNECT target is authority-form only (Utility::Url::
    // initialize with is_connect: http_parser's host:port, nothing else); it becomes
    // :authority and the request has no :path. Origin or absolute form: 400.
    http_parser_url u;
    http_parser_url_init(&u);
    if (http_parser_parse_url(url_.data(), url_.size(), 1, &u) != 0 || !(u.field_set & (1 << UF_HOST)))
      return failRequest(400);
    authority = url_;
    path.clear();
    // codec_impl.cc:883-893: a CONNECT body has no defined semantics; content-length 0 is
    // dropped, any other is a 400.
    if (cl != nullptr) {
      if (*cl != "0") return failRequest(400);
      headers_->remove("content-length");
      cl = nullptr;
    }
  } else if (!origin_form) {
    // codec_impl.cc:1111-1172 (allow_absolute_url defaults to true): the request-target's
    // host replaces Host (RFC 7230 5.7) and its scheme becomes :scheme.
    if (!splitAbsoluteUrl(url_, &scheme, &authority, &path)) return failRequest(400);
  }
  if (authority.empty()) return failRequest(400);  // HeaderUtility::requestHeadersValid

  // Utility::isUpgrade: an Upgrade header and "upgrade" among the Connection tokens (values of
  // repeated fields joined, as Envoy's inline headers are). h2c is not an upgrade to Envoy: its
  // headers are removed (codec_impl.cc:851-864). An upgrade request keeps connection and
  // upgrade for the connection manager (conn_manager_utility.cc:134-137 strips them only from
  // other requests), which refuses it without upgrade_configs.
  std::string connection_value, upgrade_value;
  bool has_upgrade = false;
  for (auto& [k, v] : headers_->entries()) {
    if (k == "connection") {
      if (!connection_value.empty()) connection_value.push_back(',');
      connection_value.append(v);
    } else if (k == "upgrade") {
      if (has_upgrade) upgrade_value.push_back(',');
      upgrade_value.append(v);
      has_upgrade = true;
    }
  }
  bool upgrade = has_upgrade && hasToken(connection_value, "upgrade");
  bool h2c = upgrade && iequals(upgrade_value, "h2c");
  if (h2c) upgrade = false;

  auto request = std::make_unique<HeaderMap>();
  request->addCopy(":authority", authority);
  if (!connect) request->addCopy(":path", path);
  request->addCopy(":method", http_method_str(static_cast<enum http_method>(parser_.method)));
  request->addCopy(":scheme", scheme);
  bool close_requested = false;
  bool expect_continue = false;
  for (auto& [k, v] : headers_->entries()) {
    if (k == "host") continue;
    if (k == "connection" && hasToken(v, "close")) close_requested = true;
    if (h2c && k == "http2-settings") continue;
    if (isHopByHop(k)) continue;
    if (k == "expect" && iequals(v, "100-continue")) {
      expect_continue = true;
      continue;
    }
    request->addCopy(k, v);
  }
  if (upgrade) {
    request->addCopy("connection", connection_value);
    request->addCopy("upgrade", upgrade_value);
  }
  if (expect_continue) {
    // conn_manager_impl.cc:1431-1441: without proxy_100_continue Envoy answers
    // "100 Continue" itself and removes Expect, so the upstream never sees it. Done here
    // because the codec interface has no encode1xxHeaders.
    write("HTTP/1.1 100 Continue\r\n\r\n");
  }
  headers_ = std::make_unique<HeaderMap>();  // from now on: trailers
  header_count_ = 0;
  processing_trailers_ = true;

  // The stream exists since the first byte (onMessageBegin); a timeout may have ended it.
  if (!stream_ || stream_->decoder_ == nullptr) return -1;
  stream_->head_ = parser_.method == HTTP_HEAD;
  stream_->close_requested_ = close_requested;
  stream_->protocol_ = 1;

  if (upgrade || connect) {
    // codec_impl.cc:878-896, 950-965: an upgrade or CONNECT request puts the codec in upgrade
    // mode: the headers are decoded without end_stream, whatever follows them is upgrade
    // payload (never parsed as HTTP: no request smuggled behind a refused upgrade), and the
    // request never completes, so the connection closes when the response ends. The
    // connection manager decides (upgrade_configs): a refused upgrade is answered 403 (or
    // 404 without a route) and its payload discarded; an allowed one gets the payload as
    // body data (dispatchInput).
    upgrade_payload_ = true;
    stream_->decoder_->decodeHeaders(std::move(request), false);
    return 2;
  }
  const bool chunked = te != nullptr;  // "chunked" exactly: anything else was refused above
  const bool has_body = chunked || (parser_.content_length > 0 && parser_.content_length != ULLONG_MAX);
  if (chunked) {
    // The body is read by chunked_; returning 2 makes http_parser stop after the headers
    // (an "upgrade": it skips the body and ends its message here, see onMessageComplete).
    reading_chunked_ = true;
    chunked_.reset();
  }
  if (has_body) {
    stream_->decoder_->decodeHeaders(std::move(request), false);
  } else {
    // codec_impl.cc:1241-1260: a bodiless request is decoded with end_stream at message
    // complete, so upper layers see the end of stream with the headers.
    stream_->pending_headers_ = std::move(request);
  }
  return chunked ? 2 : 0;
}

int ServerConnection::onBody(const char* at, size_t len) {
  if (stream_ && stream_->decoder_) body_.add(at, len);
  return 0;
}

void ServerConnection::onChunkData(const char* data, size_t len) {
  if (stream_ && stream_->decoder_) body_.add(data, len);
}

bool ServerConnection::onTrailerField(std::string_view name, std::string_view value) {
  // The same checks as a header line (commitHeader): count, name token, value characters,
  // and max_request_headers_kb over the trailers (codec_impl.cc checkMaxHeadersSize).
  if (headers_->byteSize() + name.size() + value.size() > max_headers_bytes_) {
    failRequest(431);
    return false;
  }
  field_.assign(name);
  value_.assign(value);
  return commitHeader();
}

void ServerConnection::flushBody(bool end_stream) {
  if (!stream_ || stream_->decoder_ == nullptr) {
    body_.drainAll();
    return;
  }
  if (body_.empty() && !end_stream) return;
  stream_->decoder_->decodeData(body_, end_stream);
  body_.drainAll();
}

int ServerConnection::onMessageComplete() {
  // http_parser ends its message right after the headers of a chunked request (onHeadersComplete
  // returned 2); the body follows, read by chunked_. Likewise for an upgrade: payload follows.
  if (reading_chunked_ || upgrade_payload_) return 0;
  if (processing_trailers_ && last_was_value_ && !commitHeader()) return -1;
  onRequestComplete();
  return 0;
}

void ServerConnection::onRequestComplete() {
  // Stop after each request; dispatchInput resumes once the response is done.
  pauseParser(&parser_);
  if (!stream_) return;
  stream_->request_complete_ = true;
  if (stream_->decoder_ == nullptr) return;  // response already finished; body discarded
  if (stream_->pending_headers_) {
    stream_->decoder_->decodeHeaders(std::move(stream_->pending_headers_), true);
  } else if (headers_ && headers_->size() > 0) {
    flushBody(false);
    if (stream_ && stream_->decoder_) stream_->decoder_->decodeTrailers(std::move(headers_));
  } else {
    flushBody(true);
  }
}

void ServerConnection::write(std::string_view data) {
  if (closed_ || data.empty()) return;
  bufferevent_write(bev_, data.data(), data.size());
  checkWriteWatermarks();
}

// connection_impl.cc onWriteBufferHighWatermark/LowWatermark -> codec_impl.cc
// ServerConnectionImpl::onAboveHighWatermark/onBelowLowWatermark -> the active stream.
void ServerConnection::checkWriteWatermarks() {
  if (write_limit_ == 0 || closed_) return;
  const size_t pending = evbuffer_get_length(bufferevent_get_output(bev_));
  if (!above_write_high_ && pending > write_limit_) {
    above_write_high_ = true;
    if (stream_ && stream_->decoder_) stream_->decoder_->onAboveWriteBufferHighWatermark();
  } else if (above_write_high_ && pending <= write_limit_ / 2) {
    above_write_high_ = false;
    if (stream_ && stream_->decoder_) stream_->decoder_->onBelowWriteBufferLowWatermark();
  }
}

bool ServerConnection::shouldCloseAfterResponse() const {
  if (server_.draining()) return true;
  return stream_ && (stream_->close_requested_ || stream_->wrote_close_);
}

void ServerConnection::onResponseComplete() {
  if (!stream_) return;
  if (!stream_->request_complete_) {
    // The response finished before the request body: stop feeding the decoder and close after
    // the response is flushed instead of skipping the rest of the body (conn_manager_impl.cc
    // doEndStream, "remote not complete" on a non-multiplexed connection).
    detachStream();
    closeAfterFlush();
    return;
  }
  if (dispatching_) {
    stream_done_pending_ = true;
    return;
  }
  finishStream();
}

void ServerConnection::detachStream() {
  ActiveRequest* done = stream_.release();
  done->decoder_ = nullptr;
  // A stream that ends with reads still disabled must not leave the connection deaf
  // (codec_impl.h:45-50, StreamEncoderImpl's destructor).
  uint32_t undo = done->read_disable_calls_;
  done->read_disable_calls_ = 0;
  done->conn_ = nullptr;
  while (undo-- > 0) readDisable(false);
  dispatcher_.deferredDelete([done] { delete done; });
}

void ServerConnection::finishStream() {
  if (!stream_) return;
  const bool close = shouldCloseAfterResponse();
  detachStream();
  if (close) {
    closeAfterFlush();
    return;
  }
  // Keep-alive: parse the next (possibly already buffered) request from a fresh event, not
  // from inside the connection manager's call stack.
  if (evbuffer_get_length(bufferevent_get_input(bev_)) > 0) resume_timer_->enableTimer(std::chrono::milliseconds(0));
}

void ServerConnection::resetFromEncoder() {
  // The connection manager aborted the stream; HTTP/1 has no stream reset, so the connection
  // goes (codec_impl.cc StreamEncoderImpl::resetStream). No onResetStream back to the caller.
  if (stream_) stream_->decoder_ = nullptr;
  closeConnection(false);
}

void ServerConnection::readDisable(bool disable) {
  if (closed_) return;
  if (disable) {
    if (read_disable_count_++ == 0) bufferevent_disable(bev_, EV_READ);
    return;
  }
  if (read_disable_count_ == 0) return;
  if (--read_disable_count_ == 0) {
    bufferevent_enable(bev_, EV_READ);
    // Bytes read before the disable are still buffered; parse them from a fresh event.
    if (evbuffer_get_length(bufferevent_get_input(bev_)) > 0) resume_timer_->enableTimer(std::chrono::milliseconds(0));
  }
}

void ServerConnection::onDrain() {
  if (closed_) return;
  if (!stream_) {
    closeAfterFlush();
  }
  // With a stream active, shouldCloseAfterResponse() sees server.draining() at its end.
}

void ServerConnection::closeNow() { closeConnection(true); }

void ServerConnection::sendErrorAndClose(int status) {
  stats().counter("moe_host.codec." + std::to_string(status)).inc();
  MOE_LOG(Debug, "http1", "[C%lu] protocol error, responding %d", static_cast<unsigned long>(info_.id), status);
  // The answer to a HEAD request has no body, this one included (Envoy's encoder knows the
  // request was HEAD once its headers were parsed: is_response_to_head_request_).
  const bool head = stream_ && stream_->head_;
  if (stream_) {
    if (stream_->response_started_) {
      closeConnection(true);
      return;
    }
    RequestDecoder* decoder = stream_->decoder_;
    detachStream();
    if (decoder != nullptr) decoder->onResetStream(StreamResetReason::ProtocolError);
    if (closed_) return;
  }
  // Envoy answers through the HCM's local reply: the status text as a text/plain body and
  // "connection: close" (codec_impl.cc:1387-1408).
  std::string body = reasonPhrase(status);
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + body + "\r\n";
  appendHeaderLine(out, "content-length", std::to_string(body.size()));
  appendHeaderLine(out, "content-type", "text/plain");
  // What the HCM adds to every response it encodes, local replies included.
  appendHeaderLine(out, "date", httpDate());
  appendHeaderLine(out, "server", "envoy");
  appendHeaderLine(out, "connection", "close");
  out.append("\r\n");
  if (!head) out.append(body);
  write(out);
  closeAfterFlush();
}

void ServerConnection::closeAfterFlush() {
  if (closed_) return;
  close_after_flush_ = true;
  pauseParser(&parser_);
  resume_timer_->disableTimer();
  if (evbuffer_get_length(bufferevent_get_output(bev_)) > 0) return;  // onWriteCb comes back
  if (write_shutdown_) return;
  // Everything is written: send FIN, then wait (bounded) for the client's FIN while
  // discarding input, so a client still sending does not get a RST that eats our response.
  write_shutdown_ = true;
  ::shutdown(bufferevent_getfd(bev_), SHUT_WR);
  if (read_disable_count_ > 0) {
    read_disable_count_ = 0;
    bufferevent_enable(bev_, EV_READ);
  }
  evbuffer_drain(bufferevent_get_input(bev_), evbuffer_get_length(bufferevent_get_input(bev_)));
  linger_timer_->enableTimer(kLingerTimeout);
}

void ServerConnection::closeConnection(bool reset_stream) {
  if (closed_) return;
  closed_ = true;
  pauseParser(&parser_);
  bufferevent_disable(bev_, EV_READ | EV_WRITE);
  bufferevent_setcb(bev_, nullptr, nullptr, nullptr, nullptr);
  resume_timer_->disableTimer();
  linger_timer_->disableTimer();
  activeConnections().sub(1);
  if (stream_) {
    RequestDecoder* decoder = stream_->decoder_;
    detachStream();
    if (decoder != nullptr && reset_stream) decoder->onResetStream(StreamResetReason::ConnectionTermination);
  }
  if (callbacks_) callbacks_->onConnectionClose();
  if (on_closed_) on_closed_(this);
  dispatcher_.deferredDelete([this] { delete this; });
}

// =============================================================================================
// Client side
// =============================================================================================

struct ClientParserCallbacks {
  static ResponseParser* self(http_parser* p) { return static_cast<ResponseParser*>(p->data); }

  static int onMessageBegin(http_parser* p) {
    auto* s = self(p);
    s->started_ = true;
    s->headers_ = std::make_unique<HeaderMap>();
    s->field_.clear();
    s->value_.clear();
    s->last_was_value_ = false;
    s->trailers_ = false;
    s->transfer_encoding_seen_ = false;
    return 0;
  }
  static int onHeaderField(http_parser* p, const char* at, size_t n) {
    auto* s = self(p);
    if (s->last_was_value_ && !s->commitHeader()) return -1;
    s->field_.append(at, n);
    return s->countHeaderBytes(n) ? 0 : -1;
  }
  static int onHeaderValue(http_parser* p, const char* at, size_t n) {
    auto* s = self(p);
    s->last_was_value_ = true;
    s->value_.append(at, n);
    if (!s->trailers_) matchTransferEncodingName(*p, s->field_, s->transfer_encoding_seen_);
    return s->countHeaderBytes(n) ? 0 : -1;
  }
  static int onHeadersComplete(http_parser* p) {
    auto* s = self(p);
    if (s->last_was_value_ && !s->commitHeader()) return -1;
    const int status = p->status_code;
    const std::string* te = s->headers_->get("transfer-encoding");
    const std::string* cl = s->headers_->get("content-length");
    // codec_impl.cc:915-937, shared with requests: transfer-encoding with content-length, or a
    // transfer-coding other than chunked ("identity" included; repeated fields are joined by
    // Envoy's inline header map, so "chunked" twice is not "chunked" either).
    if (te != nullptr &&
        (cl != nullptr || !iequals(*te, "chunked") || s->headers_->getAll("transfer-encoding").size() > 1))
      return -1;
    // codec_impl.cc:1542-1558: a 1xx or 204 carries neither transfer-encoding nor a non-zero
    // content-length; "content-length: 0" is dropped.
    if (status < 200 || status == 204) {
      if (te != nullptr) return -1;
      if (cl != nullptr) {
        if (*cl != "0") return -1;
        s->headers_->remove("content-length");
      }
    }
    if (status >= 100 && status < 200 && status != 101) {
      // 100-continue and other informational responses are swallowed (Envoy forwards 100 only
      // with proxy_100_continue); the real response follows on the same connection.
      s->skipping_1xx_ = true;
      // An informational response has no body (RFC 9110 15.2); tell http_parser so, as Envoy's
      // codec does (NoBody), instead of collecting "body" bytes that would reach the router
      // before the real response's headers.
      return 1;
    }
    // A 101 to an upgrade request accepts it (codec_impl.cc:1592-1597 upgradeAllowed,
    // 1575-1580: 101 is passed on, not swallowed): connection and upgrade stay for the
    // downstream's 101, and every byte after the headers is the other protocol's.
    const bool upgraded = s->upgrade_request_ && status == 101;
    auto out = std::make_unique<HeaderMap>();
    out->addCopy(":status", std::to_string(status));
    for (auto& [k, v] : s->headers_->entries()) {
      if (isHopByHop(k) && !(upgraded && (k == "connection" || k == "upgrade"))) continue;
      out->addCopy(k, v);
    }
    if (upgraded) {
      s->headers_.reset();
      s->headers_done_ = true;
      s->upgraded_ = true;
      s->cb_.onResponseHeaders(std::move(out), false);
      // 2: http_parser ends its message here and returns; dispatch() pipes the rest.
      return 2;
    }
    s->headers_ = std::make_unique<HeaderMap>();  // now collects trailers
    s->trailers_ = true;
    s->headers_done_ = true;
    const bool no_body = s->head_request_ || statusHasNoBody(status) ||
                         (!(p->flags & F_CHUNKED) && p->content_length == 0);
    if (no_body) {
      // 1: http_parser skips the body (HEAD, 1xx, 204, 304 whatever their framing headers say,
      // as Envoy's cannotHaveBody).
      s->pending_headers_ = std::move(out);
      return 1;
    }
    if (te != nullptr) {
      // A chunked body is read by chunked_; 2 makes http_parser stop right after the headers.
      s->reading_chunked_ = true;
      s->chunked_.reset();
    }
    s->cb_.onResponseHeaders(std::move(out), false);
    return s->reading_chunked_ ? 2 : 0;
  }
  static int onBody(http_parser* p, const char* at, size_t n) {
    self(p)->body_.add(at, n);
    return 0;
  }
  static int onMessageComplete(http_parser* p) {
    auto* s = self(p);
    if (s->skipping_1xx_) {
      s->skipping_1xx_ = false;
      s->started_ = false;
      s->header_count_ = 0;
      s->header_bytes_ = 0;
      return 0;  // keep parsing: the final response follows
    }
    // http_parser ends its message after the headers of a chunked response; the body follows.
    // Likewise after an upgrade's 101: the pipe follows.
    if (s->reading_chunked_ || s->upgraded_) return 0;
    if (s->trailers_ && s->last_was_value_ && !s->commitHeader()) return -1;
    s->onComplete();
    return 0;
  }

  static const http_parser_settings& settings() {
    static const http_parser_settings s = [] {
      http_parser_settings st;
      http_parser_settings_init(&st);
      st.on_message_begin = onMessageBegin;
      st.on_header_field = onHeaderField;
      st.on_header_value = onHeaderValue;
      st.on_headers_complete = onHeadersComplete;
      st.on_body = onBody;
      st.on_message_complete = onMessageComplete;
      return st;
    }();
    return s;
  }
};

ResponseParser::ResponseParser(ResponseParserCallbacks& cb) : cb_(cb), chunked_(*this, kMaxResponseHeadersBytes) {
  reset(false);
}

void ResponseParser::onComplete() {
  pauseParser(&parser_);
  keep_alive_ = http_should_keep_alive(&parser_) != 0;
  complete_ = true;
  if (pending_headers_) {
    cb_.onResponseHeaders(std::move(pending_headers_), true);
  } else if (headers_ && headers_->size() > 0) {
    flushBody(false);
    if (!stopped_) cb_.onResponseTrailers(std::move(headers_));
  } else {
    flushBody(true);
  }
}

void ResponseParser::onChunkData(const char* data, size_t len) { body_.add(data, len); }

bool ResponseParser::countHeaderBytes(size_t n) {
  // "headers size exceeds limit": Balsa's HEADERS_TOO_LONG counts the whole header block.
  header_bytes_ += n;
  return trailers_ || header_bytes_ <= kMaxResponseHeadersBytes;
}

bool ResponseParser::onTrailerField(std::string_view name, std::string_view value) {
  if (headers_->byteSize() + name.size() + value.size() > kMaxResponseHeadersBytes) return false;
  field_.assign(name);
  value_.assign(value);
  return commitHeader();
}

void ResponseParser::reset(bool head_request) {
  http_parser_init(&parser_, HTTP_RESPONSE);
  parser_.data = this;
  head_request_ = head_request;
  started_ = headers_done_ = complete_ = error_ = stopped_ = keep_alive_ = false;
  skipping_1xx_ = trailers_ = last_was_value_ = reading_chunked_ = transfer_encoding_seen_ = false;
  upgraded_ = false;
  upgrade_request_ = false;
  header_count_ = 0;
  header_bytes_ = 0;
  field_.clear();
  value_.clear();
  headers_.reset();
  pending_headers_.reset();
  body_.drainAll();
}

bool ResponseParser::commitHeader() {
  last_was_value_ = false;
  if (field_.empty()) return true;
  if (++header_count_ > kMaxResponseHeadersCount) return false;  // codec_impl.cc:570-577
  if (!countHeaderBytes(4)) return false;  // ": " and CRLF
  if (field_.find(':') != std::string::npos || !validHeaderName(field_)) return false;
  std::string_view value = trimWhitespace(value_);
  if (!validHeaderValue(value)) return false;
  headers_->addCopy(lowerCase(field_), value);
  field_.clear();
  value_.clear();
  return true;
}

void ResponseParser::flushBody(bool end_stream) {
  if (stopped_) return;
  if (body_.empty() && !end_stream) return;
  cb_.onResponseData(body_, end_stream);
  body_.drainAll();
}

void ResponseParser::stop() {
  pauseParser(&parser_);
  stopped_ = true;
}

size_t ResponseParser::dispatch(const char* data, size_t len) {
  if (complete_ || error_ || stopped_) return 0;
  if (upgraded_) {
    // codec_impl.cc maybeDirectDispatch: upgraded bytes go on as response data, unparsed.
    body_.add(data, len);
    flushBody(false);
    return len;
  }
  if (reading_chunked_) {
    size_t n = chunked_.execute(data, len);
    if (chunked_.error() != ChunkedDecoder::Error::None) {
      MOE_LOG(Debug, "http1", "upstream chunked body error: %s", ChunkedDecoder::errorName(chunked_.error()));
      error_ = true;
      return n;
    }
    if (chunked_.done()) {
      reading_chunked_ = false;
      onComplete();
    } else if (!stopped_) {
      flushBody(false);
    }
    return n;
  }
  size_t n = http_parser_execute(&parser_, &ClientParserCallbacks::settings(), data, len);
  if (stopped_) return n;
  const auto err = HTTP_PARSER_ERRNO(&parser_);
  if (err != HPE_OK && err != HPE_PAUSED) {
    error_ = true;
    return n;
  }
  if (!complete_) flushBody(false);
  return n;
}

bool ResponseParser::onEof() {
  if (complete_ || error_ || stopped_ || !started_ || !headers_done_) return complete_;
  if (upgraded_) {
    // The upstream closed the upgraded connection: the response (the pipe's upstream half)
    // ends here. Envoy resets the stream instead (codec_client.cc:117-135, the router's
    // onUpstreamReset after the response started: flag UC); ending it lets what was already
    // read reach the downstream before its connection closes too.
    complete_ = true;
    flushBody(true);
    return true;
  }
  if (reading_chunked_) return false;  // the chunked body did not end
  // A zero-length execute tells http_parser the connection ended: completes a body delimited
  // by connection close, and is an error anywhere else.
  http_parser_execute(&parser_, &ClientParserCallbacks::settings(), nullptr, 0);
  return complete_;
}

// ---- RequestSerializer ----

void RequestSerializer::encodeHeaders(const HeaderMap& headers, bool end_stream, std::string& out, bool allow_upgrade) {
  std::string_view method = headers.method();
  head_ = method == "HEAD";
  std::string_view path = headers.path();
  out.append(method);
  out.push_back(' ');
  out.append(path.empty() ? std::string_view("/") : path);
  out.append(" HTTP/1.1\r\n");
  std::string_view authority = headers.host();
  if (!authority.empty()) appendHeaderLine(out, "host", authority);
  bool saw_content_length = false;
  // codec_impl.cc:470-477: an upgrade request keeps its connection and upgrade headers (the
  // connection manager left them) and is never chunked: what follows is upgrade payload.
  upgrade_ = allow_upgrade && isUpgradeRequest(headers);
  for (auto& [k, v] : headers.entries()) {
    if (k.empty() || k[0] == ':') continue;
    if (isHopByHop(k) && !(upgrade_ && (k == "connection" || k == "upgrade"))) continue;
    if (k == "host" && !authority.empty()) continue;
    // The router refuses such requests (checkRequestHeadersForUpstream); never write them raw.
    if (!writableHeader(k, v)) continue;
    if (k == "content-length") saw_content_length = true;
    appendHeaderLine(out, k, v);
  }
  if (saw_content_length || upgrade_) {
    chunked_ = false;
  } else if (end_stream) {
    // codec_impl.cc:203-212: no "content-length: 0" for methods that carry no body.
    const bool bodiless = method == "GET" || method == "HEAD" || method == "DELETE" ||
                          method == "TRACE" || method == "OPTIONS" || method == "CONNECT";
    if (!bodiless) appendHeaderLine(out, "content-length", "0");
    chunked_ = false;
  } else {
    appendHeaderLine(out, "transfer-encoding", "chunked");
    chunked_ = true;
  }
  out.append("\r\n");
  if (end_stream) complete_ = true;
}

void RequestSerializer::encodeData(const Buffer& data, bool end_stream, std::string& out) {
  if (complete_) return;
  if (chunked_) {
    appendChunk(out, data.view());
    if (end_stream) appendLastChunk(out, nullptr);
  } else {
    out.append(data.view());
  }
  if (end_stream) complete_ = true;
}

void RequestSerializer::encodeTrailers(const HeaderMap& trailers, std::string& out) {
  if (complete_) return;
  if (chunked_) appendLastChunk(out, &trailers);
  complete_ = true;
}

} // namespace moe

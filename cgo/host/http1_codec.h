// HTTP/1.1 codecs (Envoy: source/common/http/http1/codec_impl.cc), both on http_parser 2.9.4.
//  - ServerConnection: one accepted downstream socket; parses requests, serialises responses,
//    enforces Envoy's limits and error replies, and drives a ServerConnectionCallbacks
//    (the connection manager) through RequestDecoder / ResponseEncoder.
//  - ResponseParser / RequestSerializer: the upstream side's framing, used by conn_pool.cc,
//    which owns the upstream socket.
#pragma once
#include <http_parser.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "buffer.h"
#include "chunked_decoder.h"
#include "codec.h"
#include "dispatcher.h"
#include "header_map.h"

struct bufferevent;

namespace moe {

class Server;
class HttpConnectionManagerFactory;

// Reason phrase for a status code ("OK", "Not Found"...; "Unknown" when not listed).
const char* reasonPhrase(int status);

// ---------------------------------------------------------------------------------------------
// Server side
// ---------------------------------------------------------------------------------------------
class ServerConnection : private ChunkedDecoder::Callbacks {
public:
  // Takes ownership of fd. on_closed runs once, when the connection closes (from the loop).
  // The object deletes itself (deferred) after closing.
  // read_limit_bytes: the listener's per_connection_buffer_limit_bytes; reading from the
  // socket pauses while that much unparsed input is buffered.
  static ServerConnection* create(Dispatcher& dispatcher, int fd, const ConnectionInfo& info,
                                  HttpConnectionManagerFactory& factory, const Server& server,
                                  uint32_t read_limit_bytes,
                                  std::function<void(ServerConnection*)> on_closed);

  // Server is draining: close now when idle, else close after the current response.
  void onDrain();
  // Immediate close (shutdown of the worker).
  void closeNow();

  class ActiveRequest;

private:
  ServerConnection(Dispatcher& dispatcher, int fd, const ConnectionInfo& info,
                   HttpConnectionManagerFactory& factory, const Server& server,
                   uint32_t read_limit_bytes, std::function<void(ServerConnection*)> on_closed);
  ~ServerConnection() override;
  friend class ActiveRequest;
  friend struct ServerParserCallbacks;

  // Socket events.
  static void onReadCb(bufferevent*, void* arg);
  static void onWriteCb(bufferevent*, void* arg);
  static void onEventCb(bufferevent*, short what, void* arg);
  void onReadable();
  void dispatchInput();
  void onRemoteClose();

  // Parser events.
  int onMessageBegin();
  int onUrl(const char* at, size_t len);
  int onHeaderField(const char* at, size_t len);
  int onHeaderValue(const char* at, size_t len);
  int onHeadersComplete();
  int onBody(const char* at, size_t len);
  int onMessageComplete();
  // The request's end: body end_stream or trailers (from http_parser or the chunked decoder).
  void onRequestComplete();
  bool commitHeader();
  // ChunkedDecoder::Callbacks: the request body is chunked (the decoder, not http_parser,
  // reads it).
  void onChunkData(const char* data, size_t len) override;
  bool onTrailerField(std::string_view name, std::string_view value) override;
  int failRequest(int status);
  void flushBody(bool end_stream);

  // Response side, called by ActiveRequest (the ResponseEncoder).
  void write(std::string_view data);
  void onResponseComplete();
  void finishStream();
  // Ends the codec's side of the current stream: inert encoder, deferred delete.
  void detachStream();
  void resetFromEncoder();
  void readDisable(bool disable);
  bool shouldCloseAfterResponse() const;

  void sendErrorAndClose(int status);
  void closeAfterFlush();
  void closeConnection(bool reset_stream);

  Dispatcher& dispatcher_;
  bufferevent* bev_;
  ConnectionInfo info_;
  const Server& server_;
  const uint32_t max_headers_bytes_;
  std::function<void(ServerConnection*)> on_closed_;
  std::unique_ptr<ServerConnectionCallbacks> callbacks_;

  http_parser parser_;
  // Parsing state of the current message.
  std::string url_;
  std::string field_, value_;
  bool last_was_value_ = false;
  HeaderMapPtr headers_;        // request headers being parsed (or trailers)
  bool processing_trailers_ = false;
  uint32_t header_count_ = 0;
  int error_status_ = 0;        // set by a parser callback that rejects the request
  bool transfer_encoding_seen_ = false;  // a header named exactly transfer-encoding (matchTransferEncodingName)
  Buffer body_;                 // body bytes parsed in the current dispatch, not yet delivered
  // A chunked request body is read by chunked_ (Balsa's rules), not by http_parser, which
  // accepts a bare LF in a chunk extension: http_parser stops after the headers and is
  // re-initialised for the next request when the body ends.
  ChunkedDecoder chunked_;
  bool reading_chunked_ = false;
  // The current request is an upgrade or CONNECT: the bytes after its headers are upgrade
  // payload, not HTTP; the connection closes after the response.
  bool upgrade_payload_ = false;

  std::unique_ptr<ActiveRequest> stream_;
  uint64_t unclaimed_wire_bytes_ = 0;  // parsed before the current request's stream existed
  bool dispatching_ = false;
  bool stream_done_pending_ = false;  // response and request completed while dispatching
  int read_disable_count_ = 0;
  TimerPtr resume_timer_;             // re-dispatches buffered input after readDisable(false)
  TimerPtr linger_timer_;             // bounds the wait for the peer's FIN after shutdown(WR)
  bool close_after_flush_ = false;
  // Write-side flow control (Envoy's connection write buffer watermarks): above
  // write_limit_ bytes of unsent output the stream is told (high watermark); at half of it
  // or less again, told too (low). 0: no limit.
  const uint32_t write_limit_;
  bool above_write_high_ = false;
  void checkWriteWatermarks();
  bool write_shutdown_ = false;
  bool closed_ = false;
};

// ---------------------------------------------------------------------------------------------
// Client side
// ---------------------------------------------------------------------------------------------
class ResponseParserCallbacks {
public:
  virtual ~ResponseParserCallbacks() = default;
  virtual void onResponseHeaders(HeaderMapPtr headers, bool end_stream) = 0;
  virtual void onResponseData(Buffer& data, bool end_stream) = 0;
  virtual void onResponseTrailers(HeaderMapPtr trailers) = 0;
};

// Parses one response at a time. Envoy's ClientConnectionImpl equivalent without the socket.
// Refuses (error()) what Envoy's client codec refuses, each an upstream protocol error there:
// more than 100 header fields or a header block over 80 KiB (the cluster defaults:
// max_headers_count, and max_response_headers_kb unset -> MAX_RESPONSE_HEADERS_KB,
// codec_impl.h:32), transfer-encoding together with content-length or other than "chunked"
// (codec_impl.cc:915-937), transfer-encoding or a non-zero content-length on a 1xx or 204
// (codec_impl.cc:1542-1558), and chunked framing Balsa refuses (ChunkedDecoder).
class ResponseParser : private ChunkedDecoder::Callbacks {
public:
  explicit ResponseParser(ResponseParserCallbacks& cb);
  // Prepares for the response to a new request.
  void reset(bool head_request);
  // Feeds bytes; returns how many were consumed. Parsing stops after a complete response
  // (complete() then true), on error (error() true) or when stop() was called by a callback.
  size_t dispatch(const char* data, size_t len);
  // The upstream closed: ends a close-delimited body. Returns true when that completed the
  // response.
  bool onEof();
  // Makes dispatch() return as soon as the current callback returns (the owner is closing).
  void stop();
  bool complete() const { return complete_; }
  bool error() const { return error_; }
  bool started() const { return started_; }
  bool headersDone() const { return headers_done_; }
  // At completion: the response allows keep-alive (no "connection: close", HTTP/1.1...).
  bool keepAlive() const { return keep_alive_ && !upgraded_; }
  // The request is an upgrade (set before its response arrives): a 101 then switches the
  // parser to a pipe, every later byte response data, the upstream's close its end.
  void setUpgradeRequest(bool upgrade) { upgrade_request_ = upgrade; }
  bool upgraded() const { return upgraded_; }

private:
  friend struct ClientParserCallbacks;
  bool commitHeader();
  void flushBody(bool end_stream);
  // The response's end (from http_parser or the chunked decoder).
  void onComplete();
  void onChunkData(const char* data, size_t len) override;
  bool onTrailerField(std::string_view name, std::string_view value) override;

  ResponseParserCallbacks& cb_;
  http_parser parser_;
  ChunkedDecoder chunked_;
  bool reading_chunked_ = false;  // a chunked body: chunked_ reads it, http_parser stopped
  uint32_t header_count_ = 0;
  size_t header_bytes_ = 0;
  bool countHeaderBytes(size_t n);
  bool head_request_ = false;
  bool started_ = false, headers_done_ = false, complete_ = false, error_ = false;
  bool stopped_ = false, keep_alive_ = false, skipping_1xx_ = false, trailers_ = false;
  bool last_was_value_ = false;
  bool transfer_encoding_seen_ = false;  // a header named exactly transfer-encoding
  bool upgrade_request_ = false, upgraded_ = false;
  std::string field_, value_;
  HeaderMapPtr headers_;
  HeaderMapPtr pending_headers_;  // bodiless response: delivered with end_stream at completion
  Buffer body_;
};

// Serialises one request (Envoy's RequestEncoderImpl framing rules).
class RequestSerializer {
public:
  // Appends the request line and headers to out. Host comes from :authority. allow_upgrade:
  // the request may be sent as an upgrade (the connection manager allowed it); then, if its
  // headers still make it one, connection/upgrade are written and nothing is chunked.
  void encodeHeaders(const HeaderMap& headers, bool end_stream, std::string& out, bool allow_upgrade = false);
  void encodeData(const Buffer& data, bool end_stream, std::string& out);
  void encodeTrailers(const HeaderMap& trailers, std::string& out);
  bool complete() const { return complete_; }
  bool headRequest() const { return head_; }
  bool upgradeRequest() const { return upgrade_; }

private:
  bool upgrade_ = false;
  bool chunked_ = false;
  bool complete_ = false;
  bool head_ = false;
};

// Shared by both directions.
void appendChunk(std::string& out, std::string_view data);
void appendLastChunk(std::string& out, const HeaderMap* trailers);
// Header value check done by Envoy's HeaderUtility (nghttp2 rules): no NUL, CR or LF.
bool validHeaderValue(std::string_view v);
// Envoy's HeaderUtility::headerNameIsValid: RFC 7230 token characters, one leading ':' allowed
// for pseudo-headers (an empty name passes, as in Envoy).
bool validHeaderName(std::string_view k);
// What may be written as "k: v\r\n" without changing the message framing: a non-empty valid
// name and a value without NUL/CR/LF. Filters (Go plugins) can put anything into a header map;
// the encoders drop entries that fail this instead of writing them raw.
inline bool writableHeader(std::string_view k, std::string_view v) {
  return !k.empty() && validHeaderName(k) && validHeaderValue(v);
}
// HeaderUtility::checkRequiredRequestHeaders + checkValidRequestHeaders (header_utility.cc:
// 514-580), as the HTTP/1 request encoder runs them (codec_impl.cc:445-455): an error message
// when a filter left the request unsendable, empty when it is fine.
std::string checkRequestHeadersForUpstream(const HeaderMap& headers);
// IMF-fixdate of now ("Mon, 30 Nov 2026 05:00:00 GMT"), the date header Envoy adds.
std::string httpDate();

} // namespace moe

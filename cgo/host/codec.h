// Interfaces between the HTTP/1.1 server codec (http1_codec.*) and the connection manager
// (conn_manager.*), mirroring Envoy's Http::RequestDecoder / Http::ResponseEncoder /
// Http::ServerConnectionCallbacks. The codec owns framing (content-length / chunked, trailers,
// keep-alive, limits); the connection manager owns streams and filters.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "buffer.h"
#include "header_map.h"

namespace moe {

class Dispatcher;

// Addresses of one downstream TCP connection. *_str are "ip:port" ("[v6]:port" for IPv6), the
// format Envoy returns for GetStringValue(DownstreamLocalAddress/RemoteAddress).
struct ConnectionInfo {
  std::string local_ip, remote_ip;
  uint16_t local_port = 0, remote_port = 0;
  std::string local_str, remote_str;
  uint64_t id = 0;
};

enum class StreamResetReason { ConnectionTermination, LocalReset, ConnectionFailure, Overflow, ProtocolError };

// Implemented by the connection manager's ActiveStream; called by the codec on the worker thread.
class RequestDecoder {
public:
  virtual ~RequestDecoder() = default;
  // headers contains :method :path :authority (from Host) :scheme ("http") first, then the
  // regular headers lowercased. end_stream when the request has no body.
  virtual void decodeHeaders(HeaderMapPtr headers, bool end_stream) = 0;
  // One call per body chunk as it arrives (streaming); the last has end_stream (with no
  // trailers). Decoders may move data out of the buffer.
  virtual void decodeData(Buffer& data, bool end_stream) = 0;
  // Chunked trailers; always ends the stream.
  virtual void decodeTrailers(HeaderMapPtr trailers) = 0;
  // The downstream connection closed (or the codec failed) before the stream completed.
  // The ResponseEncoder must not be used after this call.
  virtual void onResetStream(StreamResetReason reason) = 0;
  // The connection's write buffer went above its high watermark (the listener's
  // per_connection_buffer_limit_bytes) / drained below the low one (half of it): Envoy's
  // StreamCallbacks onAbove/BelowWriteBufferHighWatermark run by the HTTP/1 codec
  // (codec_impl.cc ServerConnectionImpl::onAboveHighWatermark). Also called on a new stream
  // whose connection is already above (StreamEncoderImpl's constructor).
  virtual void onAboveWriteBufferHighWatermark() {}
  virtual void onBelowWriteBufferLowWatermark() {}
};

// Implemented by the codec; one per request. Valid until the response is complete
// (end_stream encoded) or onResetStream was called.
class ResponseEncoder {
public:
  virtual ~ResponseEncoder() = default;
  // headers: ":status" first, then regular headers. The codec adds content-length or
  // transfer-encoding: chunked as needed (chunked when no content-length and not end_stream),
  // "connection: close" when the connection will close.
  virtual void encodeHeaders(const HeaderMap& headers, bool end_stream) = 0;
  virtual void encodeData(Buffer& data, bool end_stream) = 0;
  virtual void encodeTrailers(const HeaderMap& trailers) = 0;
  // Abort: closes the connection (HTTP/1 has no per-stream reset).
  virtual void resetStream() = 0;
  // Respond with "connection: close" and close after this response (DrainConnectionUponCompletion).
  virtual void setCloseAfterResponse() = 0;
  virtual const ConnectionInfo& connectionInfo() const = 0;
  // Bytes of the request as received on the wire (headers + body), for request.total_size.
  virtual uint64_t requestWireBytes() const = 0;
  // HTTP version of the request: 0 = HTTP/1.0, 1 = HTTP/1.1 (Envoy's Http::Protocol numbering).
  virtual int protocol() const = 0;
  // Stop/resume reading from the downstream socket (flow control).
  virtual void readDisable(bool disable) = 0;
};

// Implemented by the connection manager; one per downstream connection.
class ServerConnectionCallbacks {
public:
  virtual ~ServerConnectionCallbacks() = default;
  // A new request started. The returned decoder must stay valid until the response is complete
  // or onResetStream was called. HTTP/1.1: one stream at a time per connection; the codec does
  // not parse the next pipelined request until the current response is complete.
  virtual RequestDecoder& newStream(ResponseEncoder& encoder) = 0;
  // The connection is closing; no more streams.
  virtual void onConnectionClose() {}
};

} // namespace moe

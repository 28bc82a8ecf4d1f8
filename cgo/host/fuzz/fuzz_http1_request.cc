// libFuzzer target: moe-host's downstream HTTP/1.1 codec (ServerConnection in http1_codec.cc)
// on any bytes a client can send, through a real socket pair and libevent loop.
//
// Input: byte 0 = flags (below), byte 1 = the read-buffer limit (0: 1 MiB, else n*64 bytes),
// then the client's bytes. A connection manager stand-in answers every request and checks
// what the codec hands it:
//   - decodeHeaders once, first; pseudo-headers :authority :path :method :scheme once each;
//     names lower-case tokens, values without NUL/CR/LF or surrounding blanks; no hop-by-hop
//     header, no Host, no Expect: 100-continue;
//   - body only after the headers and before the end; the body length is the Content-Length
//     (an upgrade's payload: any length);
//     trailers end the stream; nothing after the end or after a reset;
// and reads back what the codec wrote to the client (with the HEAD requests known):
//   - it parses as HTTP/1.1 responses: the connection manager's, in order, each with exactly
//     the headers it set (an x-echo value from the request, percent-decoded so that it can
//     hold CR/LF: never written raw, never splits the response), plus at most one codec
//     error reply at the end; "100 Continue" only for requests that asked; nothing after a
//     response that says "connection: close"; never cut short.
#include <event2/event.h>
#include <event2/thread.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dispatcher_impl.h"
#include "fuzz_common.h"
#include "http1_codec.h"
#include "logger.h"
#include "server.h"

using namespace moe;
using moe::fuzz::describe;

namespace {

enum Flags : uint8_t {
  kOneByte = 1 << 0,     // feed the input one byte per read
  kSplit = 1 << 1,       // feed it in pieces of (flags >> 4) + 1 * 7 bytes
  kEarlyReply = 1 << 2,  // answer at the headers, before the request body
  kReset = 1 << 3,       // reset the second stream at its headers
  kReadDisable = 1 << 4, // stop reading at every body chunk, resume on the next loop turn
  kSmallHeaders = 1 << 5,// max_request_headers_kb = 1
  kChunked = 1 << 6,     // answer without content-length (chunked)
  kTrailers = 1 << 7,    // answer with trailers
};

struct FakeServer : Server {
  Options opts;
  Dispatcher* d = nullptr;
  const Options& options() const override { return opts; }
  ClusterManager& clusterManager() override { abort(); }
  Dispatcher& mainDispatcher() override { return *d; }
  uint32_t concurrency() const override { return 1; }
  Dispatcher& worker(uint32_t) override { return *d; }
  bool draining() const override { return false; }
};

// What the connection manager answered, for reading the output back.
struct Answer {
  int status = 0;
  bool head = false;
  bool complete = false;      // end_stream encoded
  std::string echo;           // x-echo value sent ("" none)
  bool echo_writable = false;
  std::string body;
  bool trailers = false;
};

struct Record {
  std::vector<Answer> answers;    // one per stream the codec created, in order
  int streams = 0;
  bool reset = false;             // some stream was reset or the connection aborted
  bool closed = false;
};

std::string percentDecode(std::string_view v) {
  std::string out;
  for (size_t i = 0; i < v.size(); i++) {
    auto hex = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    if (v[i] == '%' && i + 2 < v.size() && hex(v[i + 1]) >= 0 && hex(v[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(v[i + 1]) * 16 + hex(v[i + 2])));
      i += 2;
    } else {
      out.push_back(v[i]);
    }
  }
  return out;
}

class FuzzStream : public RequestDecoder {
public:
  FuzzStream(ResponseEncoder& enc, Record& rec, uint8_t flags, Dispatcher& d)
      : enc_(enc), rec_(rec), flags_(flags), d_(d), index_(rec.streams++) {
    rec_.answers.emplace_back();
  }

  void decodeHeaders(HeaderMapPtr h, bool end_stream) override {
    FUZZ_CHECK(!headers_ && !reset_, "headers twice or after reset");
    headers_ = true;
    const auto& e = h->entries();
    // A CONNECT (authority form only) has no :path, as in Envoy (codec_impl.cc handlePath).
    const bool connect = e.size() >= 2 && e[1].first == ":method" && e[1].second == "CONNECT";
    const size_t pseudo = connect ? 3 : 4;
    if (connect) {
      FUZZ_CHECK(e.size() >= 3 && e[0].first == ":authority" && e[2].first == ":scheme");
      FUZZ_CHECK(!e[0].second.empty(), "empty CONNECT authority");
    } else {
      FUZZ_CHECK(e.size() >= 4 && e[0].first == ":authority" && e[1].first == ":path" && e[2].first == ":method" &&
                 e[3].first == ":scheme");
      FUZZ_CHECK(!e[0].second.empty() && !e[1].second.empty(), describe(e[0].second + " " + e[1].second));
    }
    const bool upgrade = h->get("upgrade") != nullptr && h->get("connection") != nullptr;
    for (size_t i = 0; i < e.size(); i++) {
      auto& [k, v] = e[i];
      fuzz::checkEntry(k, v, i < pseudo);
      // An upgrade request keeps connection and upgrade for the connection manager, which
      // allows or refuses it (upgrade_configs, conn_manager_utility.cc); nothing else hop-by-hop.
      const bool upgrade_header = (k == "connection" || k == "upgrade") && upgrade;
      FUZZ_CHECK(upgrade_header || !fuzz::isHopByHop(k), describe(k));
      FUZZ_CHECK(k != "host", describe(k));
      FUZZ_CHECK(!(k == "expect" && lowerCase(v) == "100-continue"), describe(v));
    }
    auto cls = h->getAll("content-length");
    if (!cls.empty()) {
      for (auto& v : cls) FUZZ_CHECK(v == cls[0], describe(v));
      char* end = nullptr;
      errno = 0;
      unsigned long long n = strtoull(cls[0].c_str(), &end, 10);
      FUZZ_CHECK(!cls[0].empty() && *end == '\0' && errno == 0 && cls[0][0] != '-', describe(cls[0]));
      content_length_ = static_cast<int64_t>(n);
    }
    // An upgrade (or CONNECT) has no body framing: the codec hands on every byte after its
    // headers as upgrade payload, whatever a content-length says (codec_impl.cc:950, NoBodyData
    // then maybeDirectDispatch), and the request never ends.
    if (isUpgradeRequest(*h) || connect) content_length_ = -1;
    Answer& a = rec_.answers[index_];
    a.head = h->method() == "HEAD";
    if (const std::string* echo = h->get("x-echo")) {
      // Control characters other than NUL, CR, LF (which the codec must refuse) are written
      // as Envoy writes them, and strict readers such as http_parser refuse the response:
      // they are left out of the echo so that the read-back tests what matters, framing.
      for (char c : percentDecode(*echo)) {
        const unsigned char u = static_cast<unsigned char>(c);
        if (u >= 0x20 || u == '\t' || u == '\r' || u == '\n' || u == 0) echo_.push_back(c);
        if (u == 0x7f) echo_.pop_back();
      }
    }
    if (end_stream) {
      ended_ = true;
      checkLength();
    }
    if ((flags_ & kReset) && index_ == 1) {
      rec_.reset = true;
      reset_ = true;
      enc_.resetStream();
      return;
    }
    if ((flags_ & kEarlyReply) || end_stream) respond();
  }

  void decodeData(Buffer& data, bool end_stream) override {
    FUZZ_CHECK(headers_ && !ended_ && !reset_, "data out of order");
    body_ += data.length();
    if (content_length_ >= 0) FUZZ_CHECK(static_cast<int64_t>(body_) <= content_length_, std::to_string(body_));
    data.drainAll();
    if (end_stream) {
      ended_ = true;
      checkLength();
      if (!responded_) respond();
      return;
    }
    if ((flags_ & kReadDisable) && !responded_) {
      enc_.readDisable(true);
      auto alive = alive_;
      ResponseEncoder* enc = &enc_;
      d_.post([alive, enc] {
        if (*alive) enc->readDisable(false);
      });
    }
  }

  void decodeTrailers(HeaderMapPtr t) override {
    FUZZ_CHECK(headers_ && !ended_ && !reset_, "trailers out of order");
    FUZZ_CHECK(content_length_ < 0, "trailers on a content-length body");
    for (auto& [k, v] : t->entries()) fuzz::checkEntry(k, v, false);
    ended_ = true;
    if (!responded_) respond();
  }

  void onResetStream(StreamResetReason) override {
    FUZZ_CHECK(!reset_, "reset twice");
    reset_ = true;
    *alive_ = false;
    rec_.reset = true;
  }

  ~FuzzStream() override { *alive_ = false; }

private:
  void checkLength() {
    if (content_length_ >= 0) FUZZ_CHECK(static_cast<int64_t>(body_) == content_length_, std::to_string(body_));
  }

  void respond() {
    responded_ = true;
    Answer& a = rec_.answers[index_];
    a.status = 200 + index_ % 3;
    HeaderMap h;
    h.addCopy(":status", std::to_string(a.status));
    h.addCopy("x-fixed", "1");
    if (!echo_.empty()) {
      a.echo = echo_;
      a.echo_writable = writableHeader("x-echo", echo_);
      h.addCopy("x-echo", echo_);
    }
    a.body = "ok:" + std::to_string(body_);
    if (!(flags_ & kChunked)) h.addCopy("content-length", std::to_string(a.body.size()));
    enc_.encodeHeaders(h, false);
    Buffer b(a.body);
    if (flags_ & kTrailers) {
      enc_.encodeData(b, false);
      HeaderMap t;
      t.addCopy("x-trailer", "t");
      t.addCopy("x-bad-trailer", echo_.empty() ? "v" : echo_);
      a.trailers = (flags_ & kChunked) != 0;
      a.complete = true;  // set before: encodeTrailers may complete the stream synchronously
      enc_.encodeTrailers(t);
    } else {
      a.complete = true;
      enc_.encodeData(b, true);
    }
    // The codec may delete the encoder from the next loop turn on: never touch it again.
    *alive_ = false;
  }

  ResponseEncoder& enc_;
  Record& rec_;
  uint8_t flags_;
  Dispatcher& d_;
  int index_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  bool headers_ = false, ended_ = false, reset_ = false, responded_ = false;
  int64_t content_length_ = -1;
  uint64_t body_ = 0;
  std::string echo_;
};

class FuzzConnManager : public ServerConnectionCallbacks {
public:
  FuzzConnManager(Record& rec, uint8_t flags, Dispatcher& d) : rec_(rec), flags_(flags), d_(d) {}
  RequestDecoder& newStream(ResponseEncoder& enc) override {
    // Streams live until the connection manager goes (the codec may still call them).
    streams_.push_back(std::make_unique<FuzzStream>(enc, rec_, flags_, d_));
    return *streams_.back();
  }
  void onConnectionClose() override { rec_.closed = true; }

private:
  Record& rec_;
  uint8_t flags_;
  Dispatcher& d_;
  std::vector<std::unique_ptr<FuzzStream>> streams_;
};

class FuzzFactory : public HttpConnectionManagerFactory {
public:
  FuzzFactory(Record& rec, uint8_t flags) : rec_(rec), flags_(flags) {}
  std::unique_ptr<ServerConnectionCallbacks> createConnectionManager(Dispatcher& d, const ConnectionInfo&) override {
    return std::make_unique<FuzzConnManager>(rec_, flags_, d);
  }
  uint32_t maxRequestHeadersBytes() const override { return (flags_ & kSmallHeaders) ? 1024 : 60 * 1024; }
  void setListenerAddress(const std::string&, uint16_t) override {}

private:
  Record& rec_;
  uint8_t flags_;
};

DispatcherImpl& dispatcher() {
  static DispatcherImpl* d = [] {
    evthread_use_pthreads();
    setAllLogLevels(Off);
    return new DispatcherImpl("worker_0", 0);
  }();
  return *d;
}

void turn(DispatcherImpl& d, int n) {
  for (int i = 0; i < n; i++) event_base_loop(d.base(), EVLOOP_NONBLOCK);
}

void drain(int fd, std::string& out) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) return;
    out.append(buf, static_cast<size_t>(n));
  }
}

bool isCodecError(int status) {
  return status == 400 || status == 413 || status == 426 || status == 431 || status == 501;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2 || size > 256 * 1024) return 0;
  const uint8_t flags = data[0];
  const uint32_t read_limit = data[1] == 0 ? 1024 * 1024 : data[1] * 64u;
  std::string_view input(reinterpret_cast<const char*>(data + 2), size - 2);

  DispatcherImpl& d = dispatcher();
  FakeServer server;
  server.d = &d;
  Record rec;
  FuzzFactory factory(rec, flags);

  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) abort();
  int big = 512 * 1024;
  setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
  setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
  fcntl(sv[0], F_SETFL, O_NONBLOCK);
  fcntl(sv[1], F_SETFL, O_NONBLOCK);
  ConnectionInfo info;
  info.local_ip = "127.0.0.1";
  info.remote_ip = "127.0.0.1";
  info.local_port = 10000;
  info.remote_port = 5555;
  info.local_str = "127.0.0.1:10000";
  info.remote_str = "127.0.0.1:5555";
  bool gone = false;
  ServerConnection* conn = ServerConnection::create(d, sv[0], info, factory, server, read_limit,
                                                    [&gone](ServerConnection*) { gone = true; });
  (void)conn;

  std::string out;
  size_t piece = input.size();
  if (flags & kOneByte) piece = 1;
  else if (flags & kSplit) piece = static_cast<size_t>((flags >> 4) + 1) * 7;
  if (piece == 0) piece = 1;
  size_t off = 0;
  int stuck = 0;  // turns without progress while the socket buffer is full (reading paused)
  while (off < input.size() && !gone && stuck < 50) {
    size_t n = std::min(piece, input.size() - off);
    ssize_t w = write(sv[1], input.data() + off, n);
    if (w > 0) {
      off += static_cast<size_t>(w);
      stuck = 0;
    } else {
      stuck++;
    }
    turn(d, 3);
    drain(sv[1], out);
  }
  for (int i = 0; i < 8 && !gone; i++) {
    turn(d, 2);
    drain(sv[1], out);
  }
  // The client finishes sending and waits: EOF closes the connection (Envoy resets an active
  // stream on a downstream close), the linger wait ends on it too.
  shutdown(sv[1], SHUT_WR);
  for (int i = 0; i < 20 && !gone; i++) {
    turn(d, 2);
    drain(sv[1], out);
  }
  FUZZ_CHECK(gone, "the connection did not close after the client's EOF");
  turn(d, 4);  // deferred deletes
  drain(sv[1], out);
  close(sv[1]);

  // ---- read back what the client got ----
  std::vector<bool> head;
  for (auto& a : rec.answers) head.push_back(a.head);
  fuzz::Reader reader(HTTP_RESPONSE, head);
  const bool parsed = reader.feed(out);
  const bool clean_end = parsed && reader.eof();
  // The connection manager writes each response whole, so even a reset or a codec error leaves
  // whole responses behind: the output always parses, and ends between two of them.
  FUZZ_CHECK(parsed, reader.error + " in " + describe(out));
  FUZZ_CHECK(clean_end, "response cut short: " + describe(out));

  size_t ai = 0;  // next answer of the connection manager
  int continues = 0;
  bool after_close = false;
  for (size_t i = 0; i < reader.msgs.size(); i++) {
    const fuzz::Message& m = reader.msgs[i];
    FUZZ_CHECK(!after_close, "a response after connection: close: " + describe(out));
    if (m.status == 100) {
      continues++;
      continue;
    }
    // Skip the answers the codec never let out (a stream reset before its response).
    while (ai < rec.answers.size() && rec.answers[ai].status == 0) ai++;
    const bool last = i + 1 == reader.msgs.size();
    if (ai < rec.answers.size() && m.status == rec.answers[ai].status) {
      const Answer& a = rec.answers[ai++];
      for (auto& [k, v] : m.headers) {
        FUZZ_CHECK(k == "x-fixed" || k == "x-echo" || k == "content-length" || k == "transfer-encoding" ||
                       k == "connection",
                   "unexpected response header " + describe(k) + " in " + describe(out));
      }
      FUZZ_CHECK(m.count("x-fixed") == 1, describe(out));
      if (a.echo_writable) {
        // A reader drops the blanks around a value (RFC 9110 5.5).
        auto trim = [](std::string v) {
          while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.pop_back();
          size_t i = v.find_first_not_of(" \t");
          return i == std::string::npos ? std::string() : v.substr(i);
        };
        FUZZ_CHECK(m.get("x-echo") && trim(*m.get("x-echo")) == trim(a.echo), describe(out));
      } else {
        FUZZ_CHECK(m.get("x-echo") == nullptr, describe(out));
      }
      if (m.complete && !a.head) FUZZ_CHECK(m.body == a.body, describe(m.body));
      if (m.complete && a.head) FUZZ_CHECK(m.body.empty(), describe(m.body));
      for (auto& [k, v] : m.trailers) {
        FUZZ_CHECK(k == "x-trailer" || k == "x-bad-trailer", "unexpected trailer " + describe(k));
      }
      FUZZ_CHECK(m.complete, "incomplete response " + describe(out));
    } else {
      // The codec's own error reply: the last thing on the connection.
      FUZZ_CHECK(isCodecError(m.status) && last, "response " + std::to_string(m.status) + " in " + describe(out));
      FUZZ_CHECK(m.get("connection") && *m.get("connection") == "close", describe(out));
    }
    if (const std::string* c = m.get("connection"); c && *c == "close") after_close = true;
  }
  FUZZ_CHECK(continues <= rec.streams + 1, describe(out));
  return 0;
}

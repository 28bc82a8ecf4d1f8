// ChunkedDecoder: the chunked transfer coding (RFC 9112 7.1) as Envoy's HTTP/1 codec reads it.
// Envoy 1.39 parses HTTP/1 with quiche's BalsaFrame only (codec_impl.cc:537 builds a
// BalsaParser; http-parser is gone), configured by balsa_parser.cc:160-180. The rules here are
// BalsaFrame's READING_CHUNK_* states (quiche balsa_frame.cc, the version Envoy pins in
// bazel/repository_locations.bzl) under that policy:
//   - chunk-size: hex digits only, at least one; a size that does not fit 64 bits is an error.
//     Leading whitespace, "0x", signs and any other character are errors. After the digits the
//     first of SP, HTAB, ';', CR or LF ends the size ("5 ;x" and "5\t" are fine).
//   - the rest of the size line (extensions, BWS) may hold anything except a CR not followed by
//     LF (disallow_lone_cr_in_chunk_extension, set by Envoy) and a LF not preceded by CR
//     (disallow_lone_lf_in_chunk_extension, quiche's default): "2;\nxx" is refused, so bytes
//     after a bare LF can never be taken for chunk data (request smuggling).
//   - after the chunk data everything up to the next LF is skipped: Envoy leaves
//     envoy.reloadable_features.strict_chunk_parsing off (runtime_features.cc:275), so stray
//     bytes or a bare LF there are only warnings in Balsa.
//   - after the last chunk: trailer fields, one per line ending in LF (CR optional), a line
//     starting with SP/HTAB continues the previous field (obs-fold is allowed:
//     disallow_header_continuation_lines=false), an empty line ends the body. A field line
//     without ':' is an error (require_header_colon).
// The decoder never buffers chunk data; trailer lines are held until complete, bounded by
// max_trailer_bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace moe {

class ChunkedDecoder {
public:
  enum class Error {
    None,
    InvalidChunkLength,     // BalsaFrameEnums::INVALID_CHUNK_LENGTH (400)
    ChunkLengthOverflow,    // CHUNK_LENGTH_OVERFLOW (400)
    InvalidChunkExtension,  // INVALID_CHUNK_EXTENSION: a lone CR or LF on the size line (400)
    InvalidTrailer,         // a trailer line without ':' or starting with a continuation (400)
    TrailersTooLong,        // TRAILER_TOO_LONG (431 on requests)
    Rejected,               // Callbacks::onTrailerField returned false
  };

  class Callbacks {
  public:
    virtual ~Callbacks() = default;
    virtual void onChunkData(const char* data, size_t len) = 0;
    // One complete trailer field: the name as received (not validated) and the value with
    // surrounding whitespace removed and folded lines joined (their CR/LF removed, as Envoy's
    // BalsaParser passes values on). false stops decoding with Error::Rejected.
    virtual bool onTrailerField(std::string_view name, std::string_view value) = 0;
  };

  ChunkedDecoder(Callbacks& callbacks, size_t max_trailer_bytes)
      : cb_(callbacks), max_trailer_bytes_(max_trailer_bytes) {}

  // Ready for a new body.
  void reset();
  // Consumes bytes of the chunked body; returns how many. Stops after the last byte of the body
  // (done()) or at an error (error() != None); then the rest of data is not consumed.
  size_t execute(const char* data, size_t len);
  bool done() const { return state_ == State::Done; }
  Error error() const { return error_; }
  static const char* errorName(Error e);

private:
  enum class State { SizeStart, Size, SizeLine, Data, DataEnd, Trailer, Done, Failed };
  bool fail(Error e);
  // A complete trailer line (CR/LF removed); false on error.
  bool onTrailerLine(std::string_view line);
  bool flushField();

  Callbacks& cb_;
  const size_t max_trailer_bytes_;
  State state_ = State::SizeStart;
  Error error_ = Error::None;
  uint64_t size_ = 0;              // the chunk size being read, then the data left
  bool prev_cr_ = false;           // SizeLine: the previous byte was CR
  std::string line_;               // Trailer: the line being read
  std::string field_name_, field_value_;  // the trailer field being built (folded lines)
  bool have_field_ = false;
  size_t trailer_bytes_ = 0;
};

} // namespace moe

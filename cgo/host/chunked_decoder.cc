#include "chunked_decoder.h"

#include <algorithm>
#include <limits>

namespace moe {

namespace {

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The characters that end a chunk-size in Balsa's READING_CHUNK_LENGTH (kDelimiter).
bool endsChunkSize(char c) { return c == ' ' || c == '\t' || c == ';' || c == '\r' || c == '\n'; }

std::string_view trimWs(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

} // namespace

const char* ChunkedDecoder::errorName(Error e) {
  switch (e) {
  case Error::None: return "none";
  case Error::InvalidChunkLength: return "HPE_INVALID_CHUNK_SIZE";
  case Error::ChunkLengthOverflow: return "CHUNK_LENGTH_OVERFLOW";
  case Error::InvalidChunkExtension: return "INVALID_CHUNK_EXTENSION";
  case Error::InvalidTrailer: return "INVALID_TRAILER_FORMAT";
  case Error::TrailersTooLong: return "trailers size exceeds limit";
  case Error::Rejected: return "invalid trailer";
  }
  return "";
}

void ChunkedDecoder::reset() {
  state_ = State::SizeStart;
  error_ = Error::None;
  size_ = 0;
  prev_cr_ = false;
  line_.clear();
  field_name_.clear();
  field_value_.clear();
  have_field_ = false;
  trailer_bytes_ = 0;
}

bool ChunkedDecoder::fail(Error e) {
  state_ = State::Failed;
  error_ = e;
  return false;
}

size_t ChunkedDecoder::execute(const char* data, size_t len) {
  size_t i = 0;
  while (i < len) {
    switch (state_) {
    case State::Done:
    case State::Failed:
      return i;

    case State::SizeStart: {
      // At least one hex digit must come first: " 5", ";x", "\r\n" are INVALID_CHUNK_LENGTH.
      const int v = hexValue(data[i]);
      if (v < 0) {
        fail(Error::InvalidChunkLength);
        return i;
      }
      size_ = static_cast<uint64_t>(v);
      state_ = State::Size;
      i++;
      break;
    }

    case State::Size: {
      const char c = data[i];
      const int v = hexValue(c);
      if (v >= 0) {
        constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
        if (size_ > kMax / 16 || kMax - size_ * 16 < static_cast<uint64_t>(v)) {
          fail(Error::ChunkLengthOverflow);
          return i;
        }
        size_ = size_ * 16 + static_cast<uint64_t>(v);
        i++;
        break;
      }
      if (!endsChunkSize(c)) {  // "0x5", "5g", "+5"
        fail(Error::InvalidChunkLength);
        return i;
      }
      state_ = State::SizeLine;  // the delimiter is looked at again as part of the line
      prev_cr_ = false;
      break;
    }

    case State::SizeLine: {
      // Extensions and BWS: anything, but CR only directly before LF and LF only after CR
      // (BalsaFrame::IsValidChunkExtensionCharacter).
      const char c = data[i];
      if (prev_cr_ && c != '\n') {
        fail(Error::InvalidChunkExtension);
        return i;
      }
      if (c == '\n' && !prev_cr_) {
        fail(Error::InvalidChunkExtension);
        return i;
      }
      prev_cr_ = c == '\r';
      i++;
      if (c == '\n') state_ = size_ > 0 ? State::Data : State::Trailer;
      break;
    }

    case State::Data: {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(size_, len - i));
      cb_.onChunkData(data + i, n);
      i += n;
      size_ -= n;
      if (size_ == 0) state_ = State::DataEnd;
      break;
    }

    case State::DataEnd:
      // CRLF is expected; without strict_chunk_parsing Balsa only warns about anything else
      // and resumes after the next LF (READING_CHUNK_TERM).
      if (data[i++] == '\n') state_ = State::SizeStart;
      break;

    case State::Trailer: {
      const char c = data[i++];
      if (++trailer_bytes_ > max_trailer_bytes_) {
        fail(Error::TrailersTooLong);
        return i;
      }
      if (c != '\n') {
        line_.push_back(c);
        break;
      }
      if (!line_.empty() && line_.back() == '\r') line_.pop_back();
      std::string line;
      line.swap(line_);
      if (!onTrailerLine(line)) return i;
      break;
    }
    }
  }
  return i;
}

bool ChunkedDecoder::onTrailerLine(std::string_view line) {
  if (line.empty()) {
    // The empty line ends the trailer section and the body.
    if (!flushField()) return false;
    state_ = State::Done;
    return true;
  }
  if (line.front() == ' ' || line.front() == '\t') {
    // obs-fold: the line continues the previous field's value.
    if (!have_field_) return fail(Error::InvalidTrailer);
    field_value_.append(line);
    return true;
  }
  if (!flushField()) return false;
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) return fail(Error::InvalidTrailer);
  field_name_.assign(line.substr(0, colon));
  field_value_.assign(line.substr(colon + 1));
  have_field_ = true;
  return true;
}

bool ChunkedDecoder::flushField() {
  if (!have_field_) return true;
  have_field_ = false;
  if (!cb_.onTrailerField(field_name_, trimWs(field_value_))) return fail(Error::Rejected);
  field_name_.clear();
  field_value_.clear();
  return true;
}

} // namespace moe

// Buffer: a byte buffer with the operations Envoy's Buffer::Instance offers the golang filter
// (add, prepend, drain, move, length). std::string backed: the host is a test tool, and a
// contiguous buffer makes GetBuffer (copy all bytes to Go) a single memcpy.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace moe {

class Buffer {
public:
  Buffer() = default;
  explicit Buffer(std::string_view s) : data_(s) {}

  size_t length() const { return data_.size(); }
  bool empty() const { return data_.empty(); }
  const char* data() const { return data_.data(); }
  std::string_view view() const { return data_; }
  std::string toString() const { return data_; }

  void add(std::string_view s) { data_.append(s); }
  void add(const void* p, size_t n) { data_.append(static_cast<const char*>(p), n); }
  void prepend(std::string_view s) { data_.insert(0, s); }
  void drain(size_t n) { data_.erase(0, n < data_.size() ? n : data_.size()); }
  void drainAll() { data_.clear(); }
  // Appends all of other and leaves it empty (Envoy's Buffer::move).
  void move(Buffer& other) {
    if (data_.empty()) data_.swap(other.data_); else data_.append(other.data_);
    other.data_.clear();
  }
  std::string& raw() { return data_; }

private:
  std::string data_;
};
using BufferPtr = std::unique_ptr<Buffer>;

} // namespace moe

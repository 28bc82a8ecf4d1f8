// proto_wire: the few protobuf wire-format pieces the golang filter needs, without libprotobuf.
// Envoy hands Go serialized google.protobuf.Any (plugin configs), google.protobuf.Struct
// (GetDynamicMetadata) and envoy.config.core.v3.Metadata (the `metadata` property); Go hands
// Envoy serialized google.protobuf.Value (SetDynamicMetadata). The host never needs to look
// inside a Value: it stores the bytes and re-emits them as a Struct map entry.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace moe::proto {

void putVarint(std::string& out, uint64_t v);
// Field key (tag << 3 | wire type) followed by a length-delimited payload.
void putBytesField(std::string& out, uint32_t field, std::string_view bytes);

// google.protobuf.Any{type_url = 1, value = 2}.
std::string encodeAny(std::string_view type_url, std::string_view value);

// google.protobuf.Struct from {key: serialized google.protobuf.Value}. Struct.fields is
// map<string, Value> = 1; each map entry is a message {1: key, 2: value}. Keys are emitted in
// sorted order (what protobuf's deterministic serialization does).
std::string encodeStruct(const std::map<std::string, std::string>& fields);

// envoy.config.core.v3.Metadata{filter_metadata map<string, Struct> = 1} from
// {filter name: {key: Value bytes}}.
std::string encodeMetadata(const std::map<std::string, std::map<std::string, std::string>>& md);

// A decoded google.protobuf.Value (what access log formatters print of dynamic metadata).
struct Value {
  enum class Kind { NotSet, Null, Number, String, Bool, Struct, List } kind = Kind::NotSet;
  double number = 0;
  std::string str;
  bool b = false;
  std::map<std::string, Value> fields;  // Struct (sorted, as Envoy prints them)
  std::vector<Value> list;
};
// Parses a serialized google.protobuf.Value; false on malformed input.
bool decodeValue(std::string_view in, Value* out);
// Parses a serialized google.protobuf.Struct into a Struct Value.
bool decodeStruct(std::string_view in, Value* out);

// google.protobuf.Value helpers (to build values the host itself produces).
std::string valueString(std::string_view s); // Value{string_value = 3}

// Minimal reader: returns false on malformed input. Calls cb(field, wire_type, varint, bytes)
// for each top-level field (bytes only for wire type 2, varint for 0; fixed32/64 are skipped).
template <class Cb> bool forEachField(std::string_view in, Cb cb);

bool readVarint(std::string_view in, size_t* pos, uint64_t* v);

template <class Cb> bool forEachField(std::string_view in, Cb cb) {
  size_t pos = 0;
  while (pos < in.size()) {
    uint64_t key = 0;
    if (!readVarint(in, &pos, &key)) return false;
    uint32_t field = static_cast<uint32_t>(key >> 3);
    int wt = static_cast<int>(key & 7);
    uint64_t v = 0;
    std::string_view bytes;
    switch (wt) {
    case 0: if (!readVarint(in, &pos, &v)) return false; break;
    case 1: if (pos + 8 > in.size()) return false; pos += 8; break;
    case 5: if (pos + 4 > in.size()) return false; pos += 4; break;
    case 2: {
      uint64_t n = 0;
      if (!readVarint(in, &pos, &n) || pos + n > in.size()) return false;
      bytes = in.substr(pos, n);
      pos += n;
      break;
    }
    default: return false;
    }
    cb(field, wt, v, bytes);
  }
  return true;
}

} // namespace moe::proto

#include "proto_wire.h"

namespace moe::proto {

void putVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void putBytesField(std::string& out, uint32_t field, std::string_view bytes) {
  putVarint(out, (static_cast<uint64_t>(field) << 3) | 2);
  putVarint(out, bytes.size());
  out.append(bytes);
}

bool readVarint(std::string_view in, size_t* pos, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= in.size()) return false;
    uint8_t b = static_cast<uint8_t>(in[(*pos)++]);
    result |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

std::string encodeAny(std::string_view type_url, std::string_view value) {
  std::string out;
  // proto3 omits empty fields.
  if (!type_url.empty()) putBytesField(out, 1, type_url);
  if (!value.empty()) putBytesField(out, 2, value);
  return out;
}

std::string encodeStruct(const std::map<std::string, std::string>& fields) {
  std::string out;
  for (auto& [key, value] : fields) {
    std::string entry;
    putBytesField(entry, 1, key);
    putBytesField(entry, 2, value);
    putBytesField(out, 1, entry);
  }
  return out;
}

std::string encodeMetadata(const std::map<std::string, std::map<std::string, std::string>>& md) {
  std::string out;
  for (auto& [name, fields] : md) {
    std::string entry;
    putBytesField(entry, 1, name);
    putBytesField(entry, 2, encodeStruct(fields));
    putBytesField(out, 1, entry);
  }
  return out;
}

std::string valueString(std::string_view s) {
  std::string out;
  putBytesField(out, 3, s);
  return out;
}

} // namespace moe::proto

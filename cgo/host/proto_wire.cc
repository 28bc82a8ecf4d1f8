#include "proto_wire.h"

#include <cstring>

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

namespace {

// Walks the fields of a message including fixed64 ones (Value.number_value is a double).
template <class Cb> bool walk(std::string_view in, Cb cb) {
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
    case 1:
      if (pos + 8 > in.size()) return false;
      for (int i = 7; i >= 0; i--) v = (v << 8) | static_cast<uint8_t>(in[pos + i]);
      pos += 8;
      break;
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
    if (!cb(field, wt, v, bytes)) return false;
  }
  return true;
}

} // namespace

bool decodeStruct(std::string_view in, Value* out) {
  out->kind = Value::Kind::Struct;
  return walk(in, [&](uint32_t field, int wt, uint64_t, std::string_view bytes) {
    if (field != 1 || wt != 2) return true;
    std::string key;
    Value v;
    bool ok = walk(bytes, [&](uint32_t f, int w, uint64_t, std::string_view b) {
      if (f == 1 && w == 2) key = std::string(b);
      else if (f == 2 && w == 2) return decodeValue(b, &v);
      return true;
    });
    if (!ok) return false;
    out->fields[key] = std::move(v);
    return true;
  });
}

bool decodeValue(std::string_view in, Value* out) {
  *out = Value();
  return walk(in, [&](uint32_t field, int wt, uint64_t v, std::string_view bytes) {
    switch (field) {
    case 1: out->kind = Value::Kind::Null; return true;
    case 2: {
      if (wt != 1) return false;
      double d;
      static_assert(sizeof(d) == sizeof(v));
      memcpy(&d, &v, sizeof(d));
      out->kind = Value::Kind::Number;
      out->number = d;
      return true;
    }
    case 3: out->kind = Value::Kind::String; out->str = std::string(bytes); return true;
    case 4: out->kind = Value::Kind::Bool; out->b = v != 0; return true;
    case 5: return decodeStruct(bytes, out);
    case 6:
      out->kind = Value::Kind::List;
      return walk(bytes, [&](uint32_t f, int w, uint64_t, std::string_view b) {
        if (f != 1 || w != 2) return true;
        Value e;
        if (!decodeValue(b, &e)) return false;
        out->list.push_back(std::move(e));
        return true;
      });
    }
    return true;
  });
}

} // namespace moe::proto

// properties: GetStringProperty's CEL attribute paths (Envoy's
// source/extensions/filters/common/expr/context.h:27-109 as used by GF:1517-1692), computed from
// the host's StreamInfo and header maps. Formatting follows Envoy's serializeStringValue:
// strings as-is, integers in decimal, bools true/false, timestamps RFC3339 UTC with
// microseconds and "+00:00", durations like absl ("1.5s"), messages as serialized protobuf,
// maps, lists and the empty path's null -> SerializationFailure.
#pragma once
#include <string>
#include <string_view>

#include "golang_abi.h"
#include "header_map.h"
#include "route_table.h"
#include "stream_info.h"

namespace moe::golang {

struct PropertyContext {
  const StreamInfo& info;
  const HeaderMap* request_headers = nullptr;
  const HeaderMap* response_headers = nullptr;
  const HeaderMap* response_trailers = nullptr;
  uint64_t request_body_bytes = 0;
  uint64_t response_body_bytes = 0;
};

CAPIStatus getProperty(const PropertyContext& ctx, std::string_view path, std::string* out);

} // namespace moe::golang

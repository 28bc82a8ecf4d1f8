// Request-target normalisation before routing: Envoy's ConnectionManagerUtility::
// maybeNormalizePath and maybeNormalizeHost (source/common/http/conn_manager_utility.cc:768-832)
// with PathUtil (source/common/http/path_utility.cc) and HeaderUtility's host helpers
// (source/common/http/header_utility.cc:375-450). The connection manager runs them on the
// request headers before the route is chosen and before any filter sees the request, so route
// matches and plugins see the path Envoy would give them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "bootstrap.h"

namespace moe {

enum class NormalizePathAction { Continue, Reject, Redirect };

// The whole :path (with its query). Reject: 400 path_normalization_failed; Redirect: 307 to the
// rewritten :path (UNESCAPE_AND_REDIRECT).
NormalizePathAction maybeNormalizePath(std::string& path, const bootstrap::HttpConnectionManager& hcm);
// Whether maybeNormalizePath can change a path under this config (otherwise it only refuses a
// fragment).
bool rewritesPath(const bootstrap::HttpConnectionManager& hcm);

// PathUtil::canonicalPath: the path part (before '?') through the URL path canonicaliser Envoy
// links (Chromium's, see path_normalizer.cc); false when it refuses the path (a NUL, raw or
// %00).
bool canonicalPath(std::string& path);
// PathUtil::mergeSlashes: runs of '/' in the path part become one.
void mergeSlashes(std::string& path);
// PathUtil::unescapeSlashes: %2F/%2f and %5C/%5c in the path part decoded; true if any was.
bool unescapeSlashes(std::string& path);

// maybeNormalizeHost on :authority: strip_trailing_host_dot, then strip_any_host_port or
// strip_matching_host_port (against the listener's port). Returns the port stripped, if any.
std::optional<uint32_t> maybeNormalizeHost(std::string& host, const bootstrap::HttpConnectionManager& hcm,
                                           uint32_t listener_port);

} // namespace moe

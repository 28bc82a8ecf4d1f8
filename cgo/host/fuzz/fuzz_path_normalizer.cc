// libFuzzer target: moe-host's request-target normalisation (path_normalizer.cc) on any
// :path. Invariants of what reaches the route table and the filters once normalisation is on:
// it starts with '/', has no dot segment and no backslash, no byte outside the printable
// ASCII path set, and normalising it again changes nothing (a second proxy or the upstream
// cannot read another path out of it); merge_slashes leaves no "//" in the path part.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_common.h"
#include "path_normalizer.h"

using moe::fuzz::describe;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  moe::bootstrap::HttpConnectionManager hcm;
  hcm.normalize_path = true;
  hcm.merge_slashes = true;
  hcm.path_with_escaped_slashes_action = moe::bootstrap::HttpConnectionManager::EscapedSlashesAction::UnescapeAndForward;
  std::string path = input;
  moe::NormalizePathAction action = moe::maybeNormalizePath(path, hcm);
  if (action == moe::NormalizePathAction::Reject) {
    FUZZ_CHECK(input.find('#') != std::string::npos || input.find('\0') != std::string::npos ||
                   input.find('%') != std::string::npos,
               "refused without a fragment, a NUL or an escape: " + describe(input));
    return 0;
  }
  FUZZ_CHECK(action == moe::NormalizePathAction::Continue, describe(input));
  const std::string_view p = std::string_view(path).substr(0, path.find('?'));
  FUZZ_CHECK(!p.empty() && p.front() == '/', describe(input) + " -> " + describe(path));
  for (unsigned char c : p) {
    FUZZ_CHECK(c > 0x20 && c < 0x7f && c != '\\' && c != '#', describe(input) + " -> " + describe(path));
  }
  FUZZ_CHECK(p.find("//") == std::string_view::npos || p.find_first_not_of('/') == std::string_view::npos,
             describe(input) + " -> " + describe(path));
  for (std::string_view seg : {"/./", "/../"}) {
    FUZZ_CHECK(p.find(seg) == std::string_view::npos, describe(input) + " -> " + describe(path));
  }
  FUZZ_CHECK(!(p.size() >= 2 && p.substr(p.size() - 2) == "/.") && !(p.size() >= 3 && p.substr(p.size() - 3) == "/..") ,
             describe(input) + " -> " + describe(path));
  // The canonicaliser alone is idempotent (escaped slashes stay escaped once unescaped ones
  // are gone).
  std::string once = input.substr(0, input.find('?'));
  if (moe::canonicalPath(once)) {
    std::string twice = once;
    FUZZ_CHECK(moe::canonicalPath(twice) && twice == once, describe(input) + ": " + describe(once) + " -> " + describe(twice));
  }
  return 0;
}

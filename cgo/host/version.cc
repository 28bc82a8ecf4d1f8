#include "version.h"

// Written by the Makefile (out/obj/host*/version_stamp.h, rewritten only when it changes).
#include "version_stamp.h"

namespace moe {

const char* envoyVersion() { return "1.39.0"; }

const std::string& hostVersion() {
  static const std::string* v = new std::string(std::string(MOE_HOST_REVISION) + "/" + envoyVersion() +
                                                "/" + MOE_HOST_REVISION_STATUS + "/" + MOE_HOST_BUILD_TYPE +
                                                "/moe-host");
  return *v;
}

} // namespace moe

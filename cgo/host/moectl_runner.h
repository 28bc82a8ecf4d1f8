// Runs moectl, the compiler of Envoy configs into the JSON moe-host reads
// (compiled-bootstrap.md): the bootstrap at start, and xDS resource files at start and on every
// reload (xds.h). moe-host never decodes Envoy's protos itself.
#pragma once
#include <string>
#include <vector>

namespace moe {

// moectl next to this binary, then $MOE_MOECTL, then PATH (compiled-bootstrap.md).
std::string findMoectl();

struct MoectlResult {
  int exit_code = -1;  // -1: killed by a signal or not run
  std::string out;     // standard output; standard error goes straight to ours
};

// Runs `moectl ARGS...` and waits for it. Throws std::runtime_error only when it cannot start.
MoectlResult runMoectl(const std::vector<std::string>& args);

} // namespace moe

// The command line, as Envoy's (source/server/options_impl.cc, parsed there by TCLAP): the same
// flag names, defaults and validation, `--help` and `--version` printed in TCLAP's shape, and
// parse errors reported the way TCLAP reports them. Flags Envoy has that change nothing in
// moe-host (hot restart, base id, mutex tracing, ...) are accepted; the few that would change
// behaviour moe-host does not have are refused (`--config-yaml`, `--log-format`, ...).
#pragma once
#include "server.h"

namespace moe {

// Parses argv. Prints --help / --version on stdout and exits 0; prints a parse error (and the
// brief usage) on stderr and exits 1, as Envoy does.
Options parseOptions(int argc, char** argv);

} // namespace moe

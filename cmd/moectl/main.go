// Command moectl checks and compiles Envoy bootstrap files for moe.
//
//	moectl compile -c envoy.yaml [-o out.json]   compiled bootstrap JSON for moe-host
//	moectl validate -c envoy.yaml                "ok", or every problem found
//	moectl version
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/moeproxy/moe/cmd/moectl/internal/plugincheck"
	"github.com/moeproxy/moe/cmd/moectl/internal/pluginconfig"
)

// Plugin configs are checked with the framework's registry (every plugin of the bundle is
// linked in), offline: decode and Validate, no Init (see pluginconfig).
func init() { plugincheck.Validate = pluginconfig.Validate }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  moectl compile -c envoy.yaml [-o out.json] [-skip-library-check] [-skip-plugin-check]
  moectl validate -c envoy.yaml [-skip-library-check] [-skip-plugin-check]
  moectl version
`

// run is main without the process exit, so tests can drive the CLI.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "compile":
		return cmdCompile(args[1:], stdout, stderr)
	case "validate":
		return cmdValidate(args[1:], stdout, stderr)
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, versionString())
		return 0
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "moectl: unknown command %q\n%s", args[0], usage)
		return 2
	}
}

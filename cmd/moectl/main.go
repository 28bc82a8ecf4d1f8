// Command moectl checks Envoy and Istio configs for moe offline, compiles bootstraps for
// moe-host and renders EnvoyFilters from short policy files.
//
//	moectl validate FILE...                 Envoy bootstraps, xDS resource files, Kubernetes YAML with EnvoyFilters
//	moectl compile -c envoy.yaml [-o out]   the compiled bootstrap moe-host runs (moe-host calls this)
//	moectl render POLICY                    an EnvoyFilter (gateway or sidecar) from a policy file
//	moectl version
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/moeproxy/moe/cmd/moectl/internal/plugincheck"
	"github.com/moeproxy/moe/cmd/moectl/internal/pluginconfig"
)

// compile checks plugin configs with the framework's registry (every plugin of the bundle
// is linked in) by decoding and Validate(); validate goes further (see package validate).
func init() { plugincheck.Validate = pluginconfig.Validate }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// exitError carries an exit status through cobra.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// Exit statuses.
const (
	exitOK       = 0
	exitProblems = 1 // invalid config, I/O error
	exitUsage    = 2
)

// run is main without the process exit, so tests can drive the CLI.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(compatArgs(root, args))
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	if ee, ok := err.(exitError); ok {
		return ee.code
	}
	// cobra's own errors: unknown command or flag, wrong number of arguments.
	fmt.Fprintf(stderr, "moectl: %v\nRun 'moectl --help' for usage.\n", err)
	return exitUsage
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "moectl",
		Short: "Check Envoy and Istio configs for moe offline, compile bootstraps for moe-host",
		Long: `moectl checks configs for moe (Go plugins in Envoy's golang filter) offline, with Envoy's
and Istio's own protos and every moe plugin's config check, compiles Envoy bootstraps for
moe-host, and renders Istio EnvoyFilters from short policy files.`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		Version:           versionString(),
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%s: %w", c.CommandPath(), err)
	})
	root.AddCommand(newValidateCmd(), newCompileCmd(), newRenderCmd(), newPluginsCmd(), newSchemaCmd(), newVersionCmd())
	return root
}

// compatArgs accepts Go-flag-style single-dash long flags (-skip-library-check), which
// moectl took before it used cobra and which scripts and tests still pass.
func compatArgs(root *cobra.Command, args []string) []string {
	long := map[string]bool{}
	var collect func(c *cobra.Command)
	collect = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflagFlag) { long[f.Name] = true })
		for _, s := range c.Commands() {
			collect(s)
		}
	}
	collect(root)
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(name) > 1 && long[name] {
			a = "-" + a
		}
		out = append(out, a)
	}
	return out
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/moeproxy/moe/cmd/moectl/internal/compile"
	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// newCompileCmd is `moectl compile`, which moe-host runs at start (`moectl compile -c
// FILE`, JSON on standard output; see cgo/host/main.cc). Its interface and output must stay
// as they are.
func newCompileCmd() *cobra.Command {
	var config, out string
	var skipLibrary, skipPlugins bool
	c := &cobra.Command{
		Use:   "compile -c envoy.yaml [-o out.json]",
		Short: "Compile an Envoy bootstrap into the JSON moe-host runs",
		Long: `compile validates an Envoy bootstrap (YAML or JSON) with Envoy's protos, refuses with its
YAML path everything moe-host cannot run, checks moe plugin configs (decoding and Validate),
and prints the compiled bootstrap that moe-host runs (schema: cgo/host/compiled-bootstrap.md).
moe-host runs it itself at start.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if config == "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "moectl compile: -c FILE is required")
				return exitError{exitUsage}
			}
			res, err := compile.File(config, compile.Options{SkipLibraryCheck: skipLibrary, SkipPluginCheck: skipPlugins})
			if res != nil {
				for _, w := range res.Warnings {
					fmt.Fprintf(cmd.ErrOrStderr(), "moectl: warning: %s\n", w)
				}
			}
			if err != nil {
				printErrors(cmd.ErrOrStderr(), config, err)
				return exitError{exitProblems}
			}
			js, err := json.MarshalIndent(res.Bootstrap, "", "  ")
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "moectl: encode compiled bootstrap: %v\n", err)
				return exitError{exitProblems}
			}
			js = append(js, '\n')
			if out == "" {
				_, err = cmd.OutOrStdout().Write(js)
			} else {
				err = os.WriteFile(out, js, 0o644)
			}
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "moectl: write compiled bootstrap: %v\n", err)
				return exitError{exitProblems}
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVarP(&config, "config", "c", "", "Envoy bootstrap file (YAML or JSON)")
	f.StringVarP(&out, "output", "o", "", "write the JSON here instead of standard output")
	f.BoolVar(&skipLibrary, "skip-library-check", false, "do not check that golang filters' library_path exists")
	f.BoolVar(&skipPlugins, "skip-plugin-check", false, "do not check plugin configs with moe's plugin registry")
	return c
}

// printErrors prints one problem per line under the file name.
func printErrors(w io.Writer, file string, err error) {
	var list ypath.List
	if !errors.As(err, &list) {
		fmt.Fprintf(w, "moectl: %s: %v\n", file, err)
		return
	}
	fmt.Fprintf(w, "moectl: %s: %d error(s):\n", file, len(list))
	for _, e := range list {
		fmt.Fprintf(w, "  %v\n", e)
	}
}

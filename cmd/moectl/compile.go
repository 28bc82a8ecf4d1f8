package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"github.com/spf13/cobra"

	"github.com/moeproxy/moe/cmd/moectl/internal/compile"
	"github.com/moeproxy/moe/cmd/moectl/internal/load"
	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// newCompileCmd is `moectl compile`, which moe-host runs at start (`moectl compile -c
// FILE`, JSON on standard output; see cgo/host/main.cc). Its interface and output must stay
// as they are.
func newCompileCmd() *cobra.Command {
	var config, out string
	var skipLibrary, skipPlugins bool
	var resources [3]string // --lds, --cds, --rds
	c := &cobra.Command{
		Use:   "compile -c envoy.yaml [-o out.json]",
		Short: "Compile an Envoy bootstrap into the JSON moe-host runs",
		Long: `compile validates an Envoy bootstrap (YAML or JSON) with Envoy's protos, refuses with its
YAML path everything moe-host cannot run, checks moe plugin configs (decoding and Validate),
and prints the compiled bootstrap that moe-host runs (schema: cgo/host/compiled-bootstrap.md).
moe-host runs it itself at start.

With --lds, --cds or --rds FILE it compiles one xDS resource file (a DiscoveryResponse in YAML
or JSON, as Envoy reads it from a path_config_source) in the context of the bootstrap -c:
moe-host runs this at start and whenever the file is moved into place. Exit status 3 means
the file could not be read or parsed at all (Envoy's update_failure), 1 that it was rejected.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if config == "" && resources == [3]string{} {
				fmt.Fprintln(cmd.ErrOrStderr(), "moectl compile: -c FILE is required")
				return exitError{exitUsage}
			}
			opts := compile.Options{SkipLibraryCheck: skipLibrary, SkipPluginCheck: skipPlugins}
			kinds := []string{compile.KindLDS, compile.KindCDS, compile.KindRDS}
			kind, file := "", ""
			for i, r := range resources {
				if r == "" {
					continue
				}
				if kind != "" {
					fmt.Fprintln(cmd.ErrOrStderr(), "moectl compile: at most one of --lds, --cds, --rds")
					return exitError{exitUsage}
				}
				kind, file = kinds[i], r
			}
			if kind != "" {
				return compileResources(cmd, config, kind, file, out, opts)
			}
			res, err := compile.File(config, opts)
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
			return writeCompiled(cmd, out, "bootstrap", js, err)
		},
	}
	f := c.Flags()
	f.StringVarP(&config, "config", "c", "", "Envoy bootstrap file (YAML or JSON)")
	f.StringVarP(&out, "output", "o", "", "write the JSON here instead of standard output")
	f.BoolVar(&skipLibrary, "skip-library-check", false, "do not check that golang filters' library_path exists")
	f.BoolVar(&skipPlugins, "skip-plugin-check", false, "do not check plugin configs with moe's plugin registry")
	f.StringVar(&resources[0], "lds", "", "compile this LDS resource file (listeners) instead of the bootstrap")
	f.StringVar(&resources[1], "cds", "", "compile this CDS resource file (clusters) instead of the bootstrap")
	f.StringVar(&resources[2], "rds", "", "compile this RDS resource file (route tables) instead of the bootstrap")
	return c
}

// exitUnreadable: an xDS resource file that could not be read or parsed (update_failure).
const exitUnreadable = 3

// compileResources is `moectl compile -c BOOTSTRAP --lds|--cds|--rds FILE`.
// Without -c (moe-host given a compiled .json bootstrap) there are no static secrets.
func compileResources(cmd *cobra.Command, config, kind, file, out string, opts compile.Options) error {
	bs := &bootstrapv3.Bootstrap{}
	if config != "" {
		data, err := os.ReadFile(config)
		if err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "moectl: read bootstrap: %v\n", err)
			return exitError{exitProblems}
		}
		if bs, err = load.Bytes(data); bs == nil || err != nil {
			printErrors(cmd.ErrOrStderr(), config, err)
			return exitError{exitProblems}
		}
	}
	res, err := compile.ResourcesFile(bs, kind, file, opts)
	if err != nil {
		printErrors(cmd.ErrOrStderr(), file, err)
		if errors.Is(err, compile.ErrUnreadable) {
			return exitError{exitUnreadable}
		}
		return exitError{exitProblems}
	}
	js, err := json.Marshal(res)
	return writeCompiled(cmd, out, "resources", js, err)
}

// writeCompiled writes compiled JSON (what: "bootstrap" or "resources") to out, or to standard
// output when out is empty; encodeErr is the error of encoding it.
func writeCompiled(cmd *cobra.Command, out, what string, js []byte, encodeErr error) error {
	if encodeErr != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "moectl: encode compiled %s: %v\n", what, encodeErr)
		return exitError{exitProblems}
	}
	js = append(js, '\n')
	var err error
	if out == "" {
		_, err = cmd.OutOrStdout().Write(js)
	} else {
		err = os.WriteFile(out, js, 0o644)
	}
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "moectl: write compiled %s: %v\n", what, err)
		return exitError{exitProblems}
	}
	return nil
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

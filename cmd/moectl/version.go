package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type pflagFlag = pflag.Flag

// version is set at build time with -ldflags "-X main.version=..."; otherwise the module
// version from the build info is used.
var version = ""

// apiModules are the config-proto modules whose versions decide what moectl accepts.
var apiModules = []string{
	"github.com/envoyproxy/go-control-plane/envoy",
	"github.com/envoyproxy/go-control-plane/contrib",
	"github.com/cncf/xds/go",
	"istio.io/api",
	"github.com/envoyproxy/envoy",
}

func versionString() string {
	v := version
	deps := map[string]string{}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = bi.Main.Version
		}
		for _, d := range bi.Deps {
			deps[d.Path] = d.Version
		}
	}
	if v == "" {
		v = "(devel)"
	}
	parts := []string{}
	for _, m := range apiModules {
		if dv, ok := deps[m]; ok {
			parts = append(parts, m+" "+dv)
		}
	}
	s := fmt.Sprintf("moectl %s %s", v, runtime.Version())
	if len(parts) > 0 {
		s += "\nconfig protos: " + strings.Join(parts, ", ")
	}
	return s
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print moectl's version and the config-proto modules it was built with",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			fmt.Fprintln(c.OutOrStdout(), versionString())
			return nil
		},
	}
}

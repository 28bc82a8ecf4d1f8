package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/moeproxy/moe/cmd/moectl/internal/render"
	"github.com/moeproxy/moe/cmd/moectl/validate"
)

func newRenderCmd() *cobra.Command {
	var out string
	var force bool
	var opts validate.Options
	c := &cobra.Command{
		Use:   "render POLICY",
		Short: "Render an Istio EnvoyFilter (gateway or sidecar) from a moe policy file",
		Long: `render turns a short policy file into the EnvoyFilter that runs moe's plugins in Istio's
ingress gateway or in a workload's sidecars, validates it like 'moectl validate' (Istio's and
Envoy's protos, every plugin config with its Init), and prints it (or writes it with -o).
Nothing is written when the result has errors.

Policy file (YAML):

  target: gateway              # gateway (istio-ingressgateway) or sidecar (inbound traffic)
  name: moe-gateway            # EnvoyFilter name (default moe-<target>)
  namespace: istio-system      # default istio-system for a gateway; required for a sidecar
  selector: {istio: ingressgateway}   # workloadSelector labels (required for a sidecar)
  port: 8080                   # optional: one listener port (gateway) / inbound port (sidecar)
  library_path: /etc/moe/libgolang.so # default, where istio/*-patch.yaml mount the library
  plugins:                     # the chain, as in a bootstrap's plugin_config value
  - {name: key-auth, config: {sources: ["header:x-api-key"]}}
  consumers:                   # chain-level consumers (optional)
  - {name: alice, auth: {key-auth: {keys: [alice-key]}}}
  routes:                      # per-route overrides, merged over the chain by plugin name
  - route: healthz             # an Envoy route name (VirtualService http[].name)
    vhost: "*:80"              # optional: the virtual host; alone, the whole virtual host
    plugins: [{name: key-auth, disabled: true}]

An example is istio/policy-gateway.yaml; 'moectl render istio/policy-gateway.yaml' prints
istio/envoyfilter-gateway.yaml's patches.`,
		Example: `  moectl render policy.yaml | kubectl apply -f -
  moectl render -o envoyfilter.yaml policy.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "moectl render: %v\n", err)
				return exitError{exitProblems}
			}
			p, err := render.Parse(data)
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\n", args[0], err)
				return exitError{exitProblems}
			}
			y, err := render.Render(p, filepath.Base(args[0]))
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "moectl render: %v\n", err)
				return exitError{exitProblems}
			}
			name := "rendered from " + args[0]
			rep := validate.Bytes(name, y, opts)
			for _, f := range rep.Files[0].Findings {
				fmt.Fprintln(cmd.ErrOrStderr(), f.String())
			}
			if rep.Errors() > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "moectl render: the EnvoyFilter has %d error(s) (lines of the rendered YAML; print it with --force)\n", rep.Errors())
				if !force {
					return exitError{exitProblems}
				}
			}
			if out == "" {
				_, err = cmd.OutOrStdout().Write(y)
			} else {
				err = os.WriteFile(out, y, 0o644)
			}
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "moectl render: %v\n", err)
				return exitError{exitProblems}
			}
			if rep.Errors() > 0 {
				return exitError{exitProblems}
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVarP(&out, "output", "o", "", "write the EnvoyFilter here instead of standard output")
	f.BoolVar(&force, "force", false, "print the EnvoyFilter even when it has errors (exit status stays 1)")
	f.BoolVar(&opts.NoPluginInit, "no-plugin-init", false, "check plugin configs without their Init")
	return c
}

package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/moeproxy/moe/cmd/moectl/validate"
)

func newValidateCmd() *cobra.Command {
	var configs []string
	var target, output string
	var opts validate.Options
	var quiet bool
	c := &cobra.Command{
		Use:   "validate [flags] FILE...",
		Short: "Check Envoy bootstraps, xDS resource files and Istio EnvoyFilters offline",
		Long: `validate checks each FILE (YAML or JSON; "-" is standard input) the way Envoy v1.39 (contrib
image) and istiod would, and checks every moe plugin config in it:

  - an Envoy bootstrap (envoy.yaml);
  - xDS resources as Envoy reads them from files: {version_info, resources: [{"@type": ...}]}
    or one resource with an "@type" (listeners, route tables, clusters, ...);
  - Kubernetes YAML, several documents per file: EnvoyFilters in depth (applyTo, match and
    operation, each patch value as the Envoy type of its applyTo, the patches applied to a
    representative gateway or sidecar listener), other Istio kinds decoded strictly; other
    kinds are listed as not checked.

Envoy's protos decode strictly (unknown fields, wrong types, unknown "@type"s are errors)
and every protoc-gen-validate rule runs, inside Anys and TypedStructs too. Then the checks
Envoy makes at load (router last, cluster references, duplicate names) and, for every golang
filter of library_id "moe" (and its per-route configs), the plugin configs with the
framework's whole parse including each plugin's Init, run in a child process without
network access (Linux; elsewhere Init is skipped with a note).

Every problem is printed as FILE:LINE:COL: error: [OBJECT: ]YAML.PATH: message.
--target moe-host adds, as warnings, what moe-host cannot run.

Exit status: 0 when no errors (warnings allowed), 1 when any error, 2 on usage errors.`,
		Example: `  moectl validate envoy/envoy.yaml
  moectl validate --target moe-host envoy/examples/*.yaml
  moectl validate istio/envoyfilter-gateway.yaml istio/envoyfilter-sidecar.yaml
  kubectl get envoyfilter -A -o yaml | moectl validate -`,
		RunE: func(cmd *cobra.Command, args []string) error {
			files := append(append([]string{}, configs...), args...)
			if len(files) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "moectl validate: no FILE given")
				return exitError{exitUsage}
			}
			switch target {
			case "envoy", "istio":
			case "moe-host":
				opts.TargetMoeHost = true
			default:
				fmt.Fprintf(cmd.ErrOrStderr(), "moectl validate: --target %q: want envoy or moe-host\n", target)
				return exitError{exitUsage}
			}
			rep := validate.Files(files, opts)
			switch output {
			case "json":
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return exitError{exitProblems}
				}
			case "text":
				printReport(cmd, rep, quiet)
			default:
				fmt.Fprintf(cmd.ErrOrStderr(), "moectl validate: --output %q: want text or json\n", output)
				return exitError{exitUsage}
			}
			if rep.Errors() > 0 {
				return exitError{exitProblems}
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringArrayVarP(&configs, "config", "c", nil, "a file to check (same as an argument; repeatable)")
	f.StringVar(&target, "target", "envoy", "what will run the config: envoy (Envoy 1.39 contrib or Istio) or moe-host (adds what moe-host cannot run as warnings)")
	f.StringVarP(&output, "output", "o", "text", "text or json")
	f.BoolVarP(&quiet, "quiet", "q", false, "print problems only, no summary lines")
	f.BoolVar(&opts.SkipLibraryCheck, "skip-library-check", false, "do not warn about a golang filter library_path missing on this machine")
	f.BoolVar(&opts.SkipPluginCheck, "skip-plugin-check", false, "do not check moe plugin configs")
	f.BoolVar(&opts.NoPluginInit, "no-plugin-init", false, "check plugin configs by decoding and Validate() only, without their Init (which runs in check-only mode)")
	return c
}

func printReport(cmd *cobra.Command, rep *validate.Report, quiet bool) {
	out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	for _, fr := range rep.Files {
		for _, f := range fr.Findings {
			fmt.Fprintln(errw, f.String())
		}
		if quiet {
			continue
		}
		errs, warns := 0, 0
		for _, f := range fr.Findings {
			if f.Severity == validate.Error {
				errs++
			} else {
				warns++
			}
		}
		var parts []string
		if len(fr.Checked) > 0 {
			parts = append(parts, strings.Join(fr.Checked, ", "))
		}
		if fr.PluginConfigs > 0 {
			parts = append(parts, fmt.Sprintf("%d moe plugin config(s)", fr.PluginConfigs))
		}
		if len(fr.Skipped) > 0 {
			parts = append(parts, "not checked: "+strings.Join(fr.Skipped, ", "))
		}
		what := strings.Join(parts, "; ")
		status := "ok"
		switch {
		case errs > 0:
			status = fmt.Sprintf("%d error(s)", errs)
			if warns > 0 {
				status += fmt.Sprintf(", %d warning(s)", warns)
			}
		case warns > 0:
			status = fmt.Sprintf("ok, %d warning(s)", warns)
		}
		if what != "" {
			status += " (" + what + ")"
		}
		fmt.Fprintf(out, "%s: %s\n", fr.File, status)
	}
}

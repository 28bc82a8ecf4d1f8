package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/moeproxy/moe/plugins/all"
	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/registry"
)

// moectl plugins and moectl schema print the catalogue generated from the
// plugins' descriptions, READMEs and config types (plugins/all.Catalog).

func newPluginsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "plugins [NAME]",
		Short: "List the plugins of the bundle, or one plugin's attributes and config fields",
		Long: `Without NAME: every plugin of the bundle with its family and what it does.
With NAME: its attributes (phase, whether it may block, body, order, the same feature elsewhere)
and its config fields (type, default, required, validation, meaning), and for auth plugins the
credential a chain-level consumer carries for it.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			out := c.OutOrStdout()
			if len(args) == 0 {
				listPlugins(out)
				return nil
			}
			e, ok := all.Lookup(args[0])
			if !ok {
				fmt.Fprintf(c.ErrOrStderr(), "moectl plugins: unknown plugin %q (moectl plugins lists them)\n", args[0])
				return exitError{exitProblems}
			}
			describePlugin(out, e)
			return nil
		},
	}
}

func listPlugins(out io.Writer) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "PLUGIN\tFAMILY\tWHAT")
	for _, e := range all.Catalog {
		fmt.Fprintf(w, "%s\t%s\t%s\n", e.Name, e.Family, e.Description)
	}
	w.Flush()
}

func describePlugin(out io.Writer, e all.Entry) {
	fmt.Fprintf(out, "%s — %s\n\n", e.Name, e.Description)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, a := range [][2]string{{"phase", e.Phase}, {"may block", e.MayBlock}, {"body", e.Body}, {"order", e.Order}, {"like", e.Like}, {"docs", e.README}} {
		fmt.Fprintf(w, "%s:\t%s\n", a[0], plain(a[1]))
	}
	w.Flush()
	printFields(out, "config", e.Fields)
	printFields(out, "consumer credential (consumers[].auth."+e.Name+")", e.Credential)
}

func printFields(out io.Writer, title string, fs []all.FieldDoc) {
	if len(fs) == 0 {
		return
	}
	fmt.Fprintf(out, "\n%s:\n", title)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "  FIELD\tTYPE\tDEFAULT\tREQUIRED\tVALIDATION\tDESCRIPTION")
	for _, f := range fs {
		req := ""
		if f.Required {
			req = "yes"
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\t%s\n", f.Path, f.Type, plain(f.Default), req, plain(f.Validation), plain(f.Description))
	}
	w.Flush()
}

// plain drops markdown's backticks and link syntax for the terminal.
func plain(s string) string {
	s = strings.ReplaceAll(s, "`", "")
	for {
		i := strings.Index(s, "](")
		if i < 0 {
			return s
		}
		j := strings.IndexByte(s[i:], ')')
		k := strings.LastIndexByte(s[:i], '[')
		if j < 0 || k < 0 {
			return s
		}
		s = s[:k] + s[k+1:i] + s[i+j+1:]
	}
}

func newSchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema NAME",
		Short: "Print a plugin's config as a JSON Schema (for editors and admission checks)",
		Long: `Prints the JSON Schema (draft 2020-12) of a plugin's config: the structure the framework
decodes strictly (field names, types, no unknown fields), with the defaults and the
descriptions of its README. Value checks (ranges, formats) are the plugin's own: run
moectl validate for those.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			p, ok := registry.Get(args[0])
			e, _ := all.Lookup(args[0])
			if !ok {
				fmt.Fprintf(c.ErrOrStderr(), "moectl schema: unknown plugin %q (moectl plugins lists them)\n", args[0])
				return exitError{exitProblems}
			}
			docs := map[string]string{}
			for _, f := range e.Fields {
				docs[f.Path] = plain(f.Description)
			}
			var s map[string]any
			if p.NewConfig == nil {
				s = map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "additionalProperties": false}
			} else {
				s = config.Schema(p.NewConfig(), docs)
			}
			s["title"] = e.Name
			s["description"] = e.Description
			s["$id"] = "https://moe.local/schemas/" + e.Name + ".json"
			if req := required(e.Fields); len(req) > 0 {
				s["required"] = req
			}
			enc := json.NewEncoder(c.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(s)
		},
	}
}

// required lists the top-level fields the README marks required.
func required(fs []all.FieldDoc) []string {
	var out []string
	for _, f := range fs {
		if f.Required && !strings.ContainsAny(f.Path, ".[") {
			out = append(out, f.Path)
		}
	}
	return out
}

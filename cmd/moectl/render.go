package main

import (
	"github.com/spf13/cobra"
)

func newRenderCmd() *cobra.Command {
	return &cobra.Command{Use: "render POLICY", Short: "Render an Istio EnvoyFilter from a moe policy file", Args: cobra.ExactArgs(1),
		RunE: func(*cobra.Command, []string) error { return nil }}
}

package cli

import "github.com/spf13/cobra"

func newMCPCmd(env *IO) *cobra.Command {
	return &cobra.Command{Use: "mcp", Short: "(not built yet)", Hidden: true}
}

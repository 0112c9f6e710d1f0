package cli

import "github.com/spf13/cobra"

func newServeCmd(env *IO) *cobra.Command {
	return &cobra.Command{Use: "serve", Short: "(not built yet)", Hidden: true}
}

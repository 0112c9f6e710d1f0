package cli

import "github.com/spf13/cobra"

func newReportCmd(env *IO) *cobra.Command {
	return &cobra.Command{Use: "report", Short: "(not built yet)", Hidden: true}
}

// Command gpudx diagnoses GPU failures from logs. See `gpudx --help`.
package main

import (
	"os"

	"github.com/gpudx/gpudx/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], cli.StdIO()))
}

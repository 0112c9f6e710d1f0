package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpudx/gpudx/kb"
)

func newKBNewCmd(env *IO) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "new DOMAIN/SLUG",
		Short: "Start a new entry from a skeleton",
		Long: `Write DIR/DOMAIN/SLUG.json (DIR defaults to knowledge): a skeleton with every
field of the format, those to write left empty, the Chinese text inline with
each item and a sample check among the workarounds. gpudx kb lint reports
each empty field until it is filled; docs/kb-authoring.md says how. An
existing file is never overwritten.`,
		Example: "  gpudx kb new cuda/cufft-exec-failed\n  gpudx kb lint knowledge/cuda/cufft-exec-failed.json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := kb.Skeleton(args[0], time.Now().UTC().Format("2006-01-02"))
			if err != nil {
				return usageErr("%v", err)
			}
			p := filepath.Join(dir, filepath.FromSlash(args[0])+".json")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return usageErr("%v", err)
			}
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if errors.Is(err, fs.ErrExist) {
				return usageErr("%s exists; not overwritten", p)
			}
			if err != nil {
				return usageErr("%v", err)
			}
			if _, err := f.Write(data); err != nil {
				f.Close()
				return usageErr("%v", err)
			}
			if err := f.Close(); err != nil {
				return usageErr("%v", err)
			}
			fmt.Fprintf(env.Out, "%s\n", p)
			fmt.Fprintf(env.Err, "gpudx kb new: wrote a skeleton; fill it in until `gpudx kb lint %s` passes\n", p)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "knowledge", "knowledge tree to write into")
	return cmd
}

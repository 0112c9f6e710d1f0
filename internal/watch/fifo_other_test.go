//go:build !unix

package watch

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs on this system") }

package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/gpudx/gpudx/facts"
	"github.com/gpudx/gpudx/internal/service"
	"github.com/gpudx/gpudx/memory"
	"github.com/gpudx/gpudx/snapshot"
)

// snapshot answers POST /api/v1/snapshots: the body is a PyTorch memory
// snapshot (pickle, or gzip of one); the answer is `gpudx mem --format
// json`'s. Query: request, capacity (sizes), device (with request), top.
func (s *Server) snapshot(w http.ResponseWriter, r *http.Request) {
	opt, msg := memOptions(r)
	if msg != "" {
		writeError(w, http.StatusBadRequest, "%s", msg)
		return
	}
	// A gzip file is decoded here, not by the snapshot reader, so that the
	// limit holds after decompression too.
	b := s.openBody(w, r, "snapshot", s.opt.MaxSnapshotBytes, true)
	if b == nil {
		return
	}
	snap, rep, err := s.svc.Snapshot(r.Context(), b, opt)
	if err != nil {
		if s.bodyFailed(w, b) {
			return
		}
		var inv *service.InvalidError
		if errors.As(err, &inv) {
			writeError(w, http.StatusUnprocessableEntity, "not a readable PyTorch memory snapshot: %s", inv.Msg)
			return
		}
		s.serviceFailed(w, r, err)
		return
	}
	// The reader stops at the pickle's end; a body that goes on past the
	// limit is still too large (what lies between is ignored, as
	// pickle.load ignores it).
	if _, err := io.Copy(io.Discard, b); err != nil && s.bodyFailed(w, b) {
		return
	}
	if opt.Request > 0 && opt.RequestDevice >= 0 {
		if ds := devices(snap); !ds[opt.RequestDevice] {
			writeError(w, http.StatusUnprocessableEntity, "device %d: the snapshot has no segments on cuda:%d (devices with segments: %s)",
				opt.RequestDevice, opt.RequestDevice, list(ds))
			return
		}
	}
	if b.sniffed {
		rep.Info.Format += ", gzip" // as gpudx mem says of a gzip file
	}
	writeJSON(w, http.StatusOK, rep)
}

// memOptions reads the query of a snapshot upload as `gpudx mem` reads
// its flags; msg says what is wrong.
func memOptions(r *http.Request) (opt memory.Options, msg string) {
	q := r.URL.Query()
	opt = memory.Options{RequestDevice: -1, Top: 10}
	size := func(name string) (uint64, string) {
		v := q.Get(name)
		if v == "" {
			return 0, ""
		}
		n, ok := facts.ParseSize(v)
		if !ok || n < 1 || n > 1<<62 {
			return 0, fmt.Sprintf("%s: want a size such as 2GiB, 512MB or a byte count, got %q", name, v)
		}
		return uint64(n), ""
	}
	if opt.Request, msg = size("request"); msg != "" {
		return opt, msg
	}
	if opt.Capacity, msg = size("capacity"); msg != "" {
		return opt, msg
	}
	if v := q.Get("device"); v != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(v, "cuda:"))
		if err != nil || n < 0 {
			return opt, fmt.Sprintf("device: want a device ordinal such as 0 or cuda:1, got %q", v)
		}
		if opt.Request == 0 {
			return opt, "device applies to request: give request=SIZE too"
		}
		opt.RequestDevice = n
	}
	if v := q.Get("top"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			return opt, fmt.Sprintf("top: want a number from 1 to 10000, got %q", v)
		}
		opt.Top = n
	}
	return opt, ""
}

func devices(s *snapshot.Snapshot) map[int]bool {
	ds := map[int]bool{}
	for i := range s.Segments {
		ds[s.Segments[i].Device] = true
	}
	return ds
}

func list(ds map[int]bool) string {
	if len(ds) == 0 {
		return "none"
	}
	var ns []int
	for d := range ds {
		ns = append(ns, d)
	}
	sort.Ints(ns)
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ", ")
}

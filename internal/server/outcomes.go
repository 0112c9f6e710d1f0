package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/gpudx/gpudx/outcome"
)

// outcomeAnswer is what POST /api/v1/outcomes returns: the report as
// stored and the item's blended rate after it.
type outcomeAnswer struct {
	EntryID   string       `json:"entry_id"`
	Kind      outcome.Kind `json:"kind"`
	Index     int          `json:"index"`
	Worked    bool         `json:"worked"`
	RequestID string       `json:"request_id,omitempty"`
	Duplicate bool         `json:"duplicate"`
	Rate      outcome.Rate `json:"rate"`
}

// The range of a report's client-supplied time: from 2000 (before any GPU
// job this knowledge base describes) to a day ahead (clocks drift).
var (
	minReportTime  = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	maxReportAhead = 24 * time.Hour
)

// outcomes answers POST /api/v1/outcomes: 201 when the report is stored,
// 200 with "duplicate": true when its request id was seen before.
func (s *Server) outcomes(w http.ResponseWriter, r *http.Request) {
	if mt := mediaType(r); mt != "" && !isJSON(mt) {
		writeError(w, http.StatusUnsupportedMediaType, "Content-Type %q: send the report as application/json", mt)
		return
	}
	b := s.openBody(w, r, "outcome report", maxOutcomeBytes, false)
	if b == nil {
		return
	}
	var rep outcome.Report
	if err := decodeJSON(b, &rep); err != nil {
		if !s.bodyFailed(w, b) {
			writeError(w, http.StatusBadRequest, `invalid JSON body: %v (want {"entry_id": "...", "kind": "workaround" or "dead_end", "index": N, "worked": true or false})`, err)
		}
		return
	}
	if key := r.Header.Get("Idempotency-Key"); key != "" {
		if rep.RequestID != "" && rep.RequestID != key {
			writeError(w, http.StatusBadRequest, "the Idempotency-Key header and request_id differ; give one, or the same in both")
			return
		}
		rep.RequestID = key
	}
	now := time.Now().UTC()
	if rep.Time.IsZero() {
		rep.Time = now
	} else if rep.Time.Before(minReportTime) || rep.Time.After(now.Add(maxReportAhead)) {
		// A report's time orders and ages the reports; year 1 or 9999 is
		// a client's mistake (or a trick), not an observation.
		writeError(w, http.StatusBadRequest, "time %s is out of range: give a time from %s to one day from now, or none (the server's clock is used)",
			rep.Time.Format(time.RFC3339), minReportTime.Format("2006-01-02"))
		return
	}
	dup, err := s.svc.Record(r.Context(), rep)
	if err != nil {
		if errors.Is(err, outcome.ErrConflict) {
			writeError(w, http.StatusConflict, "%v", err)
			return
		}
		s.serviceFailed(w, r, err)
		return
	}
	rates, err := s.svc.Rates(r.Context(), rep.EntryID)
	if err != nil {
		s.serviceFailed(w, r, err)
		return
	}
	items := rates.Workarounds
	if rep.Kind == outcome.DeadEnd {
		items = rates.DeadEnds
	}
	if rep.Index >= len(items) { // Record checked it; the entry cannot have changed since
		s.serviceFailed(w, r, errors.New("the item of the report is gone"))
		return
	}
	status := http.StatusCreated
	if dup {
		status = http.StatusOK
	}
	writeJSON(w, status, outcomeAnswer{
		EntryID: rep.EntryID, Kind: rep.Kind, Index: rep.Index, Worked: rep.Worked,
		RequestID: rep.RequestID, Duplicate: dup, Rate: items[rep.Index],
	})
}

package wanproxy

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
)

// Counter is the traffic of one Kind. BytesIn are request body bytes
// (uploads), BytesOut response body bytes (downloads).
type Counter struct {
	Requests int64 `json:"requests"`
	BytesIn  int64 `json:"bytes_in"`
	BytesOut int64 `json:"bytes_out"`
}

// Snapshot is the cumulative traffic per Kind at one moment.
type Snapshot map[Kind]Counter

// Sub returns s - before, kind by kind: the traffic of one phase.
func (s Snapshot) Sub(before Snapshot) Snapshot {
	out := Snapshot{}
	for _, k := range Kinds {
		a, b := s[k], before[k]
		out[k] = Counter{Requests: a.Requests - b.Requests, BytesIn: a.BytesIn - b.BytesIn, BytesOut: a.BytesOut - b.BytesOut}
	}
	return out
}

// Total sums every Kind.
func (s Snapshot) Total() Counter {
	var t Counter
	for _, c := range s {
		t.Requests += c.Requests
		t.BytesIn += c.BytesIn
		t.BytesOut += c.BytesOut
	}
	return t
}

// stats holds live counters; all fields are atomics.
type stats struct {
	byKind map[Kind]*liveCounter // constant map, atomic values
}

type liveCounter struct {
	requests, bytesIn, bytesOut atomic.Int64
}

func newStats() *stats {
	s := &stats{byKind: map[Kind]*liveCounter{}}
	for _, k := range Kinds {
		s.byKind[k] = &liveCounter{}
	}
	return s
}

func (s *stats) counter(k Kind) *liveCounter {
	if c, ok := s.byKind[k]; ok {
		return c
	}
	return s.byKind[KindOther]
}

func (s *stats) snapshot() Snapshot {
	out := Snapshot{}
	for k, c := range s.byKind {
		out[k] = Counter{Requests: c.requests.Load(), BytesIn: c.bytesIn.Load(), BytesOut: c.bytesOut.Load()}
	}
	return out
}

// AdminHandler serves GET /stats (the cumulative Snapshot as JSON) and
// GET /config (the shaping in effect).
func (p *Proxy) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, p.Stats())
	})
	mux.HandleFunc("GET /config", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, p.cfg)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

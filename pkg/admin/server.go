package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
)

// Handler serves the admin endpoints of vol, with metrics from g (none
// when nil) and info at /info.
func Handler(vol Volume, info Info, g prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	if g != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	}
	mux.HandleFunc("GET /info", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, info, nil)
	})
	mux.HandleFunc("GET /cache/stats", func(w http.ResponseWriter, r *http.Request) {
		s, err := vol.Stats(r.Context())
		writeJSON(w, s, err)
	})
	mux.HandleFunc("GET /cache/ls", func(w http.ResponseWriter, r *http.Request) {
		q, err := parseEntryQuery(r.URL.Query())
		if err != nil {
			writeJSON(w, nil, err)
			return
		}
		es, err := vol.Entries(r.Context(), q)
		writeJSON(w, es, err)
	})
	mux.HandleFunc("POST /cache/verify", func(w http.ResponseWriter, r *http.Request) {
		rep, err := vol.Verify(r.Context())
		writeJSON(w, rep, err)
	})
	mux.HandleFunc("POST /cache/gc", func(w http.ResponseWriter, r *http.Request) {
		req, err := parseGCRequest(r.URL.Query())
		if err != nil {
			writeJSON(w, nil, err)
			return
		}
		res, err := vol.GC(r.Context(), req)
		writeJSON(w, res, err)
	})
	return mux
}

// writeJSON writes v, or err as an errorBody with a status that says
// whose fault it was.
func writeJSON(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, ErrInvalidArgument) {
			code = http.StatusBadRequest
		}
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(errorBody{Error: err.Error()})
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}

// Server is an admin endpoint serving on a unix socket.
type Server struct {
	// constant
	srv  *http.Server
	done chan struct{}
}

// shutdownTimeout bounds how long Close waits for running requests (a
// verify of a large cache may run longer; it is cut off).
const shutdownTimeout = 2 * time.Second

// Serve serves h on the socket at path (see Listen) until Close.
func Serve(path string, h http.Handler) (*Server, error) {
	lis, err := Listen(path)
	if err != nil {
		return nil, err
	}
	return serveOn(lis, h), nil
}

func serveOn(lis net.Listener, h http.Handler) *Server {
	s := &Server{
		srv:  &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "admin socket stopped", "socket", lis.Addr().String())
		}
	}()
	return s
}

// Close stops serving and removes the socket. It waits up to a couple of
// seconds for requests in flight, then cuts them off.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = s.srv.Close()
	}
	<-s.done
	return err
}

package driver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/klog/v2"
)

// The health endpoint does the job of the upstream livenessprobe sidecar
// in-process: GET /healthz connects to the plugin's own CSI socket, as
// kubelet and the sidecars do, and calls Probe. So it fails when the gRPC
// server stopped serving, not only when the process is gone; and on a
// node plugin it also fails once kubelet refused the registration.

// healthProbeTimeout bounds one health check.
const healthProbeTimeout = 3 * time.Second

// healthHandler answers /healthz by probing the CSI socket at sock.
type healthHandler struct {
	// constant
	sock  string
	state *registrationState // nil: no registration
}

func (h *healthHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), healthProbeTimeout)
	defer cancel()
	if err := h.check(ctx); err != nil {
		klog.V(2).InfoS("health check failed", "err", err)
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	_, _ = fmt.Fprintln(w, "ok")
}

// check probes the CSI socket and the registration.
func (h *healthHandler) check(ctx context.Context) error {
	if h.state != nil {
		if err := h.state.check(); err != nil {
			return err
		}
	}
	conn, err := grpc.NewClient("passthrough:///"+h.sock,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return dialUnix(ctx, h.sock) }))
	if err != nil {
		return fmt.Errorf("connect to %s: %w", h.sock, err)
	}
	defer func() { _ = conn.Close() }()
	// A Probe that answers "not ready" (still taking volumes back) is
	// alive: only an error or no answer fails the check.
	if _, err := csi.NewIdentityClient(conn).Probe(ctx, &csi.ProbeRequest{}); err != nil {
		return fmt.Errorf("probe %s: %w", h.sock, err)
	}
	return nil
}

// serveHealth serves /healthz at addr until stop is called; stop returns
// once the server is gone.
func serveHealth(addr string, h *healthHandler) (stop func(), err error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("driver: health address: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/healthz", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	klog.InfoS("serving health checks", "address", lis.Addr().String())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "health server stopped")
		}
	}()
	return func() { _ = srv.Close(); <-done }, nil
}

// dialUnix connects to a unix socket path.
func dialUnix(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", path)
}

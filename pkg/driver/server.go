package driver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/internal/unixsock"
)

// Service is one CSI service besides Identity: the controller or the
// node. A process serves any combination (the controller Deployment, the
// node DaemonSet, both in tests).
type Service interface {
	// register adds the service to the gRPC server.
	register(s *grpc.Server)
	// pluginCapabilities are the service's entries in
	// GetPluginCapabilities.
	pluginCapabilities() []*csi.PluginCapability
	// probe reports whether the service can do its job (an error: it
	// cannot and may need a restart) and whether it finished starting
	// (ready; Probe).
	probe(ctx context.Context) (ready bool, err error)
}

// Driver is a CSI plugin process: the Identity service plus the services
// it was built with, served on one unix socket.
type Driver struct {
	// constant
	cfg      Config
	services []Service
}

// gracePeriod bounds how long Serve waits for running calls at shutdown.
const gracePeriod = 10 * time.Second

// New validates cfg and returns a Driver serving Identity and services.
func New(cfg Config, services ...Service) (*Driver, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	for _, s := range services {
		if s == nil {
			return nil, errors.New("driver: nil service")
		}
	}
	return &Driver{cfg: cfg, services: services}, nil
}

// Run listens on the configured endpoint and serves until ctx is done,
// with the health endpoint and the kubelet registration when configured.
func (d *Driver) Run(ctx context.Context) error {
	lis, err := Listen(d.cfg.Endpoint)
	if err != nil {
		return err
	}
	sock, _ := socketPath(d.cfg.Endpoint) // validated by New
	var state *registrationState
	if d.cfg.Registration.Dir != "" {
		state = &registrationState{}
		stop, err := serveRegistration(d.cfg.Registration, d.cfg.Name, state)
		if err != nil {
			_ = lis.Close()
			return err
		}
		defer stop()
	}
	if d.cfg.HealthAddress != "" {
		stop, err := serveHealth(d.cfg.HealthAddress, &healthHandler{sock: sock, state: state})
		if err != nil {
			_ = lis.Close()
			return err
		}
		defer stop()
	}
	return d.Serve(ctx, lis)
}

// Serve serves on lis until ctx is done, then stops gracefully (running
// calls get gracePeriod to finish). It closes lis.
func (d *Driver) Serve(ctx context.Context, lis net.Listener) error {
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(d.interceptors()...))
	csi.RegisterIdentityServer(srv, &identity{name: d.cfg.Name, version: d.cfg.Version, services: d.services})
	for _, s := range d.services {
		s.register(srv)
	}
	klog.InfoS("CSI driver serving", "name", d.cfg.Name, "version", d.cfg.Version,
		"endpoint", lis.Addr().String(), "node", d.cfg.NodeID, "services", len(d.services))

	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	select {
	case err := <-done:
		return fmt.Errorf("driver: serve: %w", err)
	case <-ctx.Done():
	}
	stopped := make(chan struct{})
	go func() { srv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(gracePeriod):
		srv.Stop()
		<-stopped
	}
	klog.InfoS("CSI driver stopped", "endpoint", lis.Addr().String())
	return nil
}

// Listen opens the unix socket of a unix:///path endpoint, replacing a
// stale socket left by a previous process. It refuses to replace anything
// that is not a socket.
func Listen(endpoint string) (net.Listener, error) {
	path, err := socketPath(endpoint)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("driver: socket directory: %w", err)
	}
	lis, err := unixsock.Listen(path)
	if err != nil {
		return nil, fmt.Errorf("driver: %w", err)
	}
	return lis, nil
}

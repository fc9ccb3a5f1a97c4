package driver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"google.golang.org/grpc"
	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/basin-csi/basin/internal/unixsock"
)

// Registration is how the node plugin makes itself known to kubelet,
// doing the job of the upstream node-driver-registrar sidecar in-process:
// it serves kubelet's plugin-registration API on a socket in kubelet's
// plugin registry directory; kubelet's plugin watcher finds the socket,
// asks GetInfo and registers the CSI endpoint it names.
type Registration struct {
	// Dir is kubelet's plugin registry directory as this process sees it
	// (/var/lib/kubelet/plugins_registry on the host); "" registers
	// nothing.
	Dir string
	// KubeletEndpoint is the CSI socket's path as kubelet sees it
	// (/var/lib/kubelet/plugins/basin.csi.dev/csi.sock).
	KubeletEndpoint string
}

// registrationState is what kubelet last said of the registration.
type registrationState struct {
	mu       sync.Mutex // guards the fields below
	notified bool       // kubelet called NotifyRegistrationStatus
	err      string     // its error when it refused the plugin
}

// check reports an error when kubelet refused the plugin. Before kubelet
// answered there is nothing to report: a node plugin whose kubelet is
// slow to look is still alive.
func (s *registrationState) check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.notified && s.err != "" {
		return fmt.Errorf("kubelet refused the plugin registration: %s", s.err)
	}
	return nil
}

// registrationServer implements kubelet's Registration service.
type registrationServer struct {
	registerapi.UnimplementedRegistrationServer
	// constant
	name     string
	endpoint string
	state    *registrationState
}

// GetInfo implements registerapi.RegistrationServer.
func (r *registrationServer) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	klog.V(2).InfoS("kubelet asked for the plugin's registration info", "endpoint", r.endpoint)
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              r.name,
		Endpoint:          r.endpoint,
		SupportedVersions: []string{"1.0.0"},
	}, nil
}

// NotifyRegistrationStatus implements registerapi.RegistrationServer.
func (r *registrationServer) NotifyRegistrationStatus(_ context.Context, st *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	r.state.mu.Lock()
	r.state.notified, r.state.err = true, st.GetError()
	r.state.mu.Unlock()
	if st.GetPluginRegistered() {
		klog.InfoS("registered with kubelet", "driver", r.name, "endpoint", r.endpoint)
	} else {
		klog.ErrorS(nil, "kubelet refused the plugin registration", "driver", r.name, "error", st.GetError())
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// registrationSocket is the socket's name in the registry directory
// (kubelet accepts any name ending in .sock; this one is the registrar's).
func registrationSocket(dir, name string) string {
	return filepath.Join(dir, name+"-reg.sock")
}

// serveRegistration serves the Registration service until stop is
// called; stop returns once the server is gone. Closing the listener
// unlinks the socket (a net.UnixListener does on Close), so kubelet
// deregisters the plugin when it stops; a restarted plugin replaces the
// socket at once.
func serveRegistration(reg Registration, name string, state *registrationState) (stop func(), err error) {
	if reg.KubeletEndpoint == "" || !filepath.IsAbs(reg.KubeletEndpoint) {
		return nil, fmt.Errorf("driver: registration: the kubelet endpoint %q must be an absolute socket path", reg.KubeletEndpoint)
	}
	if err := os.MkdirAll(reg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("driver: registration directory: %w", err)
	}
	path := registrationSocket(reg.Dir, name)
	lis, err := unixsock.Listen(path)
	if err != nil {
		return nil, fmt.Errorf("driver: registration socket: %w", err)
	}
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, &registrationServer{name: name, endpoint: reg.KubeletEndpoint, state: state})
	klog.InfoS("serving kubelet plugin registration", "socket", path, "endpoint", reg.KubeletEndpoint)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(lis); err != nil {
			klog.ErrorS(err, "registration server stopped")
		}
	}()
	return func() { srv.Stop(); <-done }, nil
}

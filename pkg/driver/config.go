package driver

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultName is the CSI driver name.
const DefaultName = "basin.csi.dev"

// DefaultEndpoint is where the plugin listens unless told otherwise (the
// socket directory the Kubernetes sidecars share with it).
const DefaultEndpoint = "unix:///csi/csi.sock"

// Config is what every plugin process needs, whatever services it runs.
type Config struct {
	// Name is the CSI driver name reported by GetPluginInfo; DefaultName
	// when empty.
	Name string
	// Version is the vendor version reported by GetPluginInfo.
	Version string
	// Endpoint is the gRPC listen address, unix:///path/to/csi.sock;
	// DefaultEndpoint when empty.
	Endpoint string
	// NodeID names the machine the plugin runs on (logs, NodeGetInfo).
	NodeID string
	// Metrics, when set, receives the CSI call metrics (metrics.go).
	Metrics prometheus.Registerer
	// HealthAddress, when set, serves GET /healthz there (host:port),
	// probing the plugin through its own socket (health.go).
	HealthAddress string
	// Registration, when its Dir is set, registers the plugin with
	// kubelet (registration.go).
	Registration Registration
}

// pluginName is what the CSI spec allows as a plugin name: a domain name
// of at most 63 characters.
var pluginName = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9.]{0,61}[a-zA-Z0-9])?$`)

// withDefaults fills in the empty fields.
func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	return c
}

// validate checks a Config with defaults applied.
func (c Config) validate() error {
	if !pluginName.MatchString(c.Name) {
		return fmt.Errorf("driver name %q: want a domain name of at most 63 characters", c.Name)
	}
	if _, err := socketPath(c.Endpoint); err != nil {
		return err
	}
	return nil
}

// socketPath returns the file system path of a unix:///abs/path endpoint.
func socketPath(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "unix" || u.Host != "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("endpoint %q: want unix:///absolute/path/to/socket", endpoint)
	}
	p := u.Path
	if p == "" {
		p = u.Opaque // unix:/path
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("endpoint %q: the socket path must be absolute", endpoint)
	}
	// sun_path holds 108 bytes including the terminating NUL.
	if len(p) > 107 {
		return "", fmt.Errorf("endpoint %q: socket path longer than 107 bytes", endpoint)
	}
	return filepath.Clean(p), nil
}

// ControllerConfig configures the Controller service.
type ControllerConfig struct {
	// RequireSecret refuses requests whose secret holds no credential.
	// When false (the default) an empty provisioner secret makes the
	// object-store client use its default credential chain (IRSA / EKS Pod
	// Identity, GKE workload identity, environment, instance metadata).
	RequireSecret bool
}

package driver

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// TestRegistrationAsKubeletSeesIt plays kubelet's plugin watcher: it finds
// the socket in the registry directory, asks GetInfo, and reports the
// outcome; a refusal turns the health check red.
func TestRegistrationAsKubeletSeesIt(t *testing.T) {
	h := serveDriver(t, Config{Version: "test", NodeID: "n"})
	dir, err := os.MkdirTemp("", "basin-reg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	state := &registrationState{}
	reg := Registration{Dir: dir, KubeletEndpoint: "/var/lib/kubelet/plugins/basin.csi.dev/csi.sock"}
	stop, err := serveRegistration(reg, DefaultName, state)
	if err != nil {
		t.Fatal(err)
	}

	sock := filepath.Join(dir, DefaultName+"-reg.sock")
	if st, err := os.Stat(sock); err != nil || st.Mode().Type() != os.ModeSocket {
		t.Fatalf("registration socket %s: %v", sock, err)
	}
	conn, err := grpc.NewClient("passthrough:///"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return dialUnix(ctx, sock) }))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	kubelet := registerapi.NewRegistrationClient(conn)
	info, err := kubelet.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Type != registerapi.CSIPlugin || info.Name != DefaultName || info.Endpoint != reg.KubeletEndpoint ||
		len(info.SupportedVersions) != 1 || info.SupportedVersions[0] != "1.0.0" {
		t.Fatalf("GetInfo = %+v", info)
	}

	sockPath := strings.TrimPrefix(h.endpoint, "unix://")
	health := httptest.NewServer(&healthHandler{sock: sockPath, state: state})
	defer health.Close()
	wantHealth := func(want int) {
		t.Helper()
		resp, err := http.Get(health.URL)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("/healthz = %d, want %d", resp.StatusCode, want)
		}
	}
	wantHealth(http.StatusOK)
	if _, err := kubelet.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatal(err)
	}
	wantHealth(http.StatusOK)
	if _, err := kubelet.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{Error: "version mismatch"}); err != nil {
		t.Fatal(err)
	}
	wantHealth(http.StatusServiceUnavailable)

	stop()
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("registration socket left after stop: %v", err)
	}
}

// TestHealthFailsWithoutServer: a socket nobody serves is unhealthy.
func TestHealthFailsWithoutServer(t *testing.T) {
	dir := t.TempDir()
	health := httptest.NewServer(&healthHandler{sock: filepath.Join(dir, "none.sock")})
	defer health.Close()
	resp, err := http.Get(health.URL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/healthz = %d, want 503", resp.StatusCode)
	}
}

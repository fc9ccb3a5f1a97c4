package driver

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

func TestSocketPath(t *testing.T) {
	for in, want := range map[string]string{
		"unix:///csi/csi.sock":        "/csi/csi.sock",
		"unix:/csi/csi.sock":          "/csi/csi.sock",
		"unix:///var/lib/x/../y.sock": "/var/lib/y.sock",
	} {
		if got, err := socketPath(in); err != nil || got != want {
			t.Errorf("socketPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "/csi/csi.sock", "tcp://127.0.0.1:9000", "unix://host/csi.sock", "unix:relative.sock",
		"unix:///" + strings.Repeat("x", 120)} {
		if _, err := socketPath(in); err == nil {
			t.Errorf("socketPath(%q) accepted", in)
		}
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := New(Config{Name: "not a domain!"}); err == nil {
		t.Error("New accepted a bad driver name")
	}
	if _, err := New(Config{Endpoint: "tcp://x"}); err == nil {
		t.Error("New accepted a tcp endpoint")
	}
	if _, err := New(Config{}, nil); err == nil {
		t.Error("New accepted a nil service")
	}
	d, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if d.cfg.Name != DefaultName || d.cfg.Endpoint != DefaultEndpoint {
		t.Errorf("defaults not applied: %+v", d.cfg)
	}
}

func TestListenReplacesStaleSocketOnly(t *testing.T) {
	dir, err := os.MkdirTemp("", "basin-l-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	sock := filepath.Join(dir, "sub", "csi.sock")
	// A socket left behind by a dead process.
	if err := os.MkdirAll(filepath.Dir(sock), 0o750); err != nil {
		t.Fatal(err)
	}
	old, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	old.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = old.Close()
	lis, err := Listen("unix://" + sock)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	_ = lis.Close()
	// A regular file is never removed.
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen("unix://" + file); err == nil {
		t.Error("Listen replaced a regular file")
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Error("the file was changed")
	}
}

func TestIdentity(t *testing.T) {
	h := startDriver(t, ControllerConfig{})
	ctx := context.Background()
	info, err := h.identity.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil || info.GetName() != DefaultName || info.GetVendorVersion() != "test" {
		t.Errorf("GetPluginInfo = %v, %v", info, err)
	}
	caps, err := h.identity.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
	if err != nil || len(caps.GetCapabilities()) != 1 ||
		caps.GetCapabilities()[0].GetService().GetType() != csi.PluginCapability_Service_CONTROLLER_SERVICE {
		t.Errorf("GetPluginCapabilities = %v, %v; want CONTROLLER_SERVICE only", caps, err)
	}
	probe, err := h.identity.Probe(ctx, &csi.ProbeRequest{})
	if err != nil || !probe.GetReady().GetValue() {
		t.Errorf("Probe = %v, %v", probe, err)
	}
	cc, err := h.controller.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[csi.ControllerServiceCapability_RPC_Type]bool{}
	for _, c := range cc.GetCapabilities() {
		got[c.GetRpc().GetType()] = true
	}
	if !got[csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME] || !got[csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER] || len(got) != 2 {
		t.Errorf("ControllerGetCapabilities = %v", got)
	}
}

func TestCheckCapabilities(t *testing.T) {
	block := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	noType := &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}
	cases := []struct {
		name     string
		caps     []*csi.VolumeCapability
		readOnly bool
		ok       bool
	}{
		{"none", nil, false, false},
		{"rwo", []*csi.VolumeCapability{mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)}, false, true},
		{"rwop", []*csi.VolumeCapability{mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER)}, false, true},
		{"rwx", rwx(), false, true},
		{"rox", []*csi.VolumeCapability{mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY)}, true, true},
		{"multi single writer", []*csi.VolumeCapability{mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER)}, false, false},
		{"unknown mode", []*csi.VolumeCapability{mountCap(csi.VolumeCapability_AccessMode_UNKNOWN)}, false, false},
		{"block", []*csi.VolumeCapability{block}, false, false},
		{"no access type", []*csi.VolumeCapability{noType}, false, false},
		{"read-only volume, writer", rwx(), true, false},
		{"one bad of two", append(rwx(), block), false, false},
	}
	for _, c := range cases {
		if err := checkCapabilities(c.caps, c.readOnly); (err == nil) != c.ok {
			t.Errorf("%s: checkCapabilities = %v; want ok=%v", c.name, err, c.ok)
		}
	}
}

package driver

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/mountspec"
)

// syncBuffer is a bytes.Buffer safe for klog's concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// captureKlog sends klog's output, at verbosity 5 (every request and
// response), to a buffer until the test ends.
func captureKlog(t *testing.T) *syncBuffer {
	t.Helper()
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	set := func(k, v string) {
		if err := fs.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	set("logtostderr", "false")
	set("v", "5")
	buf := &syncBuffer{}
	klog.SetOutput(buf)
	t.Cleanup(func() {
		klog.Flush()
		set("v", "0")
		set("logtostderr", "true")
		klog.SetOutput(os.Stderr)
	})
	return buf
}

// No secret value reaches the logs or an error message, whether the
// credentials are wrong, malformed or right.
func TestSecretsStayOutOfLogsAndErrors(t *testing.T) {
	s := minioStore(t)
	// Before the driver starts: klog's flags are set while no goroutine
	// logs (and reset after the driver stopped, cleanups running last
	// first).
	logs := captureKlog(t)
	h := startDriver(t, ControllerConfig{})
	ctx := t.Context()

	const (
		badKeyID  = "BASINTESTKEYID7731"
		badSecret = "basin-wrong-secret-value-4412"
		badToken  = "basin-session-token-value-9281"
	)
	wrong := with(s.secrets, volumeattr.SecretAccessKeyID, badKeyID, volumeattr.SecretSecretAccessKey, badSecret, volumeattr.SecretSessionToken, badToken)
	half := with(s.secrets, volumeattr.SecretAccessKeyID, "", volumeattr.SecretSecretAccessKey, badSecret)
	secretValues := []string{badKeyID, badSecret, badToken, s.secrets[volumeattr.SecretAccessKeyID], s.secrets[volumeattr.SecretSecretAccessKey]}

	var errs []error
	check := func(what string, err error, code codes.Code) {
		t.Helper()
		wantCode(t, what, err, code)
		errs = append(errs, err)
	}
	for _, params := range []map[string]string{s.params, with(s.params, mountspec.KeyBucket, s.parent)} {
		_, err := h.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: uniqueName("pvc-"), VolumeCapabilities: rwx(), Parameters: params, Secrets: wrong})
		check("CreateVolume, wrong credentials", err, codes.PermissionDenied)
		_, err = h.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: uniqueName("pvc-"), VolumeCapabilities: rwx(), Parameters: params, Secrets: half})
		check("CreateVolume, half a key pair", err, codes.InvalidArgument)
	}
	// A real volume, created with the right credentials (whose values must
	// not be logged either), then deleted with wrong ones.
	vol, err := h.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: uniqueName("pvc-"), VolumeCapabilities: rwx(),
		Parameters: with(s.params, mountspec.KeyBucket, s.parent), Secrets: s.secrets})
	if err != nil {
		t.Fatal(err)
	}
	id := vol.GetVolume().GetVolumeId()
	_, err = h.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id, Secrets: wrong})
	check("DeleteVolume, wrong credentials", err, codes.PermissionDenied)
	_, err = h.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id, Secrets: half})
	check("DeleteVolume, half a key pair", err, codes.InvalidArgument)
	_, err = h.controller.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: id, VolumeCapabilities: rwx(), Secrets: wrong})
	check("ValidateVolumeCapabilities, wrong credentials", err, codes.PermissionDenied)
	if _, err := h.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id, Secrets: s.secrets}); err != nil {
		t.Fatal(err)
	}
	klog.Flush()

	out := logs.String()
	for _, v := range secretValues {
		if strings.Contains(out, v) {
			t.Errorf("secret %q appears in the logs", v)
		}
		for _, err := range errs {
			if strings.Contains(status.Convert(err).Message(), v) {
				t.Errorf("secret %q appears in error %v", v, err)
			}
		}
	}
	// The test would prove nothing if the requests were not logged.
	for _, want := range []string{"/csi.v1.Controller/CreateVolume", "/csi.v1.Controller/DeleteVolume", "***stripped***", "PermissionDenied", s.parent} {
		if !strings.Contains(out, want) {
			t.Errorf("the logs lack %q", want)
		}
	}
}

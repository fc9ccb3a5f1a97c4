package driver

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

// TestUploadSweep: the controller's pass aborts the incomplete multipart
// uploads of a volume (a prefix of a MinIO bucket) begun before the
// cutoff, and only those of that volume: a neighbour volume's upload in
// the same bucket stays, and so does one begun after the cutoff. IDs that
// are not Basin's cost nothing.
func TestUploadSweep(t *testing.T) {
	s := minioStore(t)
	ctrl, err := NewController(ControllerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	h := startDriver(t, ControllerConfig{})
	sw, err := NewUploadSweeper(ctrl, nil)
	if err != nil {
		t.Fatal(err)
	}
	params := with(s.params, volumeattr.KeyProvisioning, string(volumeattr.ProvisionPrefix), mountspec.KeyBucket, s.parent, mountspec.KeyPrefix, "vols")
	var vols [2]*csi.Volume
	for i := range vols {
		resp, err := h.controller.CreateVolume(t.Context(), &csi.CreateVolumeRequest{Name: uniqueName("pvc-"), VolumeCapabilities: rwx(), Parameters: params, Secrets: s.secrets})
		if err != nil {
			t.Fatal(err)
		}
		vols[i] = resp.GetVolume()
		abandon(t, openVolume(t, s, vols[i]), "ckpt/big")
	}
	swept := SweptVolume{ID: vols[0].GetVolumeId(), Secrets: s.secrets}
	if n, err := sw.Sweep(t.Context(), swept, time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Errorf("Sweep with a cutoff before the upload began = %d, %v; want 0", n, err)
	}
	if n, err := sw.Sweep(t.Context(), swept, time.Now().Add(time.Minute)); err != nil || n != 1 {
		t.Errorf("Sweep = %d, %v; want the volume's 1 upload", n, err)
	}
	for i, want := range []int{0, 1} {
		ups, _ := objstore.UploadsOf(openVolume(t, s, vols[i]))
		got, err := ups.ListUploads(t.Context(), "")
		if err != nil || len(got) != want {
			t.Errorf("volume %d: %d uploads left (%v), want %d", i, len(got), err, want)
		}
	}
	if n, err := sw.Sweep(t.Context(), SweptVolume{ID: "not-basins"}, time.Now()); err != nil || n != 0 {
		t.Errorf("Sweep of a foreign ID = %d, %v", n, err)
	}
}

// abandon leaves an incomplete multipart upload of key in s, as a FUSE
// process killed mid-upload does: a stream with a part sent, never
// completed nor aborted.
func abandon(t *testing.T, s objstore.Store, key string) {
	t.Helper()
	const part = 5 << 20
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	t.Cleanup(cancel)
	st, err := s.StartStream(ctx, key, bytes.NewReader(make([]byte, 2*part)), objstore.StreamOptions{PartSize: part, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	st.Extend(2 * part)
	deadline := time.Now().Add(30 * time.Second)
	for st.Sent() < part {
		if time.Now().After(deadline) {
			t.Fatalf("no part of %s uploaded", key)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

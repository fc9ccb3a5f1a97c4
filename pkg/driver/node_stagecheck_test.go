package driver

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/mountspec"
)

// TestStageRefusesAnUnusableBucket: the FUSE process checks the bucket
// before it serves; NodeStageVolume then fails with a code that says why
// and a message that names the cause, and leaves nothing staged.
func TestStageRefusesAnUnusableBucket(t *testing.T) {
	h := startNode(t, nil)
	s3 := minioStore(t)
	gcs := gcsStore(t)
	for _, tc := range []struct {
		name    string
		s       store
		edit    func(ctx, secrets map[string]string)
		code    codes.Code
		message string
	}{
		{"missing bucket", s3, func(ctx, _ map[string]string) { ctx[mountspec.KeyBucket] = uniqueName("gone-") }, codes.NotFound, "does not exist"},
		{"denied key", s3, func(_, sec map[string]string) { sec[volumeattr.SecretSecretAccessKey] = "not-the-secret-key" }, codes.PermissionDenied, "refused the credentials"},
		{"missing gs bucket", gcs, func(ctx, _ map[string]string) { ctx[mountspec.KeyBucket] = uniqueName("gone-") }, codes.NotFound, "does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newRealVolume(t, tc.s, tc.s.name+"/"+uniqueName("vol-"))
			v.secrets = with(v.secrets)
			tc.edit(v.context, v.secrets)
			staging := filepath.Join(h.dir, "staging-"+strings.ReplaceAll(tc.name, " ", "-"))
			err := h.stageCap(t, v, staging, mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER))
			wantCode(t, "NodeStageVolume", err, tc.code)
			if err != nil && !strings.Contains(err.Error(), tc.message) {
				t.Errorf("error %q does not say %q", err, tc.message)
			}
			if err != nil && strings.Contains(err.Error(), "not-the-secret-key") {
				t.Errorf("the error quotes the secret: %v", err)
			}
			if isMount(t, staging) {
				t.Error("a refused stage left a mount")
			}
			if _, ok := h.node.state.Get(v.id); ok {
				t.Error("a refused stage left the volume in the node state")
			}
		})
	}
}

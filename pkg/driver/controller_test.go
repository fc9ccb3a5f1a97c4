package driver

import (
	"context"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/backend"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// isolateDefaultChain makes the S3 SDK's default credential chain find
// nothing, quickly: no environment keys, no shared files, no instance
// metadata.
func isolateDefaultChain(t *testing.T) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent/config")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// Bad requests get the right gRPC code, before or after talking to MinIO.
func TestCreateVolumeErrors(t *testing.T) {
	s := minioStore(t)
	h := startDriver(t, ControllerConfig{})
	strict := startDriver(t, ControllerConfig{RequireSecret: true})
	prefix := with(s.params, mountspec.KeyBucket, s.parent)
	wrongKey := with(s.secrets, volumeattr.SecretSecretAccessKey, "not-the-secret-key-0000")
	block := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	cases := []struct {
		name    string
		h       *harness
		req     *csi.CreateVolumeRequest
		isolate bool
		code    codes.Code
	}{
		{"no name", h, &csi.CreateVolumeRequest{VolumeCapabilities: rwx(), Parameters: prefix, Secrets: s.secrets}, false, codes.InvalidArgument},
		{"no capabilities", h, &csi.CreateVolumeRequest{Name: "v", Parameters: prefix, Secrets: s.secrets}, false, codes.InvalidArgument},
		{"block", h, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{block}, Parameters: prefix, Secrets: s.secrets}, false, codes.InvalidArgument},
		{"unknown StorageClass mountOptions", h, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{
			groupCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER, "", "nfsvers=4")}, Parameters: prefix, Secrets: s.secrets}, false, codes.InvalidArgument},
		{"unknown parameter", h, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: rwx(), Parameters: with(prefix, "cachesize", "1Gi"), Secrets: s.secrets}, false, codes.InvalidArgument},
		{"bad quantity", h, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: rwx(), Parameters: with(prefix, mountspec.KeyCacheSize, "ten gigs"), Secrets: s.secrets}, false, codes.InvalidArgument},
		{"bad TTL", h, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: rwx(), Parameters: with(prefix, mountspec.KeyMetadataTTL, "90"), Secrets: s.secrets}, false, codes.InvalidArgument},
		{"bucket mode with bucket", h, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: rwx(), Parameters: with(prefix, volumeattr.KeyProvisioning, "bucket"), Secrets: s.secrets}, false, codes.InvalidArgument},
		{"read-only volume for writers", h, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: rwx(), Parameters: with(prefix, mountspec.KeyReadOnly, "true"), Secrets: s.secrets}, false, codes.InvalidArgument},
		{"limit below required", h, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: rwx(), Parameters: prefix, Secrets: s.secrets,
			CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 30, LimitBytes: 1 << 30}}, false, codes.OutOfRange},
		{"snapshot source", h, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: rwx(), Parameters: prefix, Secrets: s.secrets,
			VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: "s"}}}}, false, codes.InvalidArgument},
		{"endpoint only in parameters, reclaim delete", h, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: rwx(),
			Parameters: with(prefix, mountspec.KeyEndpoint, s.secrets[volumeattr.SecretEndpoint]),
			Secrets:    with(s.secrets, volumeattr.SecretEndpoint, "")}, false, codes.InvalidArgument},
		{"unknown secret key", h, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: rwx(), Parameters: prefix, Secrets: with(s.secrets, "AWS_SECRET_ACCESS_KEY", "x")}, false, codes.InvalidArgument},
		{"half a key pair", h, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: rwx(), Parameters: prefix, Secrets: with(s.secrets, volumeattr.SecretSecretAccessKey, "")}, false, codes.InvalidArgument},
		{"missing secret, secrets required", strict, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: rwx(), Parameters: with(prefix, volumeattr.KeyReclaim, "retain", mountspec.KeyEndpoint, s.secrets[volumeattr.SecretEndpoint])}, false, codes.InvalidArgument},
		{"missing secret, default chain finds nothing", h, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: rwx(), Parameters: prefix,
			Secrets: map[string]string{volumeattr.SecretEndpoint: s.secrets[volumeattr.SecretEndpoint]}}, true, codes.InvalidArgument},
		{"wrong credentials, prefix", h, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: rwx(), Parameters: prefix, Secrets: wrongKey}, false, codes.PermissionDenied},
		{"wrong credentials, bucket", h, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: rwx(), Parameters: s.params, Secrets: wrongKey}, false, codes.PermissionDenied},
		{"unknown access key", h, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: rwx(), Parameters: prefix,
			Secrets: with(s.secrets, volumeattr.SecretAccessKeyID, "nobody-0000")}, false, codes.PermissionDenied},
		{"non-existent bucket", h, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: rwx(), Parameters: with(prefix, mountspec.KeyBucket, uniqueName("missing-")), Secrets: s.secrets}, false, codes.FailedPrecondition},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.isolate {
				isolateDefaultChain(t)
			}
			_, err := c.h.controller.CreateVolume(t.Context(), c.req)
			wantCode(t, "CreateVolume", err, c.code)
		})
	}
}

// The lifecycle of a volume, on every backend and provisioning mode:
// create, idempotent create, conflicting create, validate, data in it,
// delete, idempotent delete.
func TestVolumeLifecycle(t *testing.T) {
	setups := []struct {
		name  string
		store func(*testing.T) store
		mode  volumeattr.Provisioning
	}{
		{"minio/bucket", minioStore, volumeattr.ProvisionBucket},
		{"minio/prefix", minioStore, volumeattr.ProvisionPrefix},
		{"gcs/bucket", gcsStore, volumeattr.ProvisionBucket},
		{"gcs/prefix", gcsStore, volumeattr.ProvisionPrefix},
		{"file/prefix", fileStore, volumeattr.ProvisionPrefix},
	}
	for _, setup := range setups {
		t.Run(setup.name, func(t *testing.T) {
			s := setup.store(t)
			h := startDriver(t, ControllerConfig{})
			ctx := t.Context()
			params := with(s.params, volumeattr.KeyProvisioning, string(setup.mode), mountspec.KeyCacheSize, "2Gi",
				volumeattr.KeyCacheAffinity, "false")
			if setup.mode == volumeattr.ProvisionPrefix {
				params = with(params, mountspec.KeyBucket, s.parent, mountspec.KeyPrefix, "vols")
			}
			name := uniqueName("pvc-")
			req := &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: rwx(), Parameters: params, Secrets: s.secrets,
				CapacityRange: &csi.CapacityRange{RequiredBytes: 5 << 30}}
			first, err := h.controller.CreateVolume(ctx, req)
			if err != nil {
				t.Fatalf("CreateVolume: %v", err)
			}
			vol := first.GetVolume()
			if vol.GetCapacityBytes() != 5<<30 || len(vol.GetVolumeId()) > maxVolumeIDLen {
				t.Errorf("volume %q capacity %d", vol.GetVolumeId(), vol.GetCapacityBytes())
			}
			a, err := volumeattr.Parse(vol.GetVolumeContext(), s.secrets)
			if err != nil || a.CheckMountable() != nil || a.CacheSize != 2<<30 {
				t.Fatalf("VolumeContext %v: %+v, %v", vol.GetVolumeContext(), a, err)
			}
			// The placement webhook reads the StorageClass's opt-out from the PV.
			if got := vol.GetVolumeContext()[volumeattr.KeyCacheAffinity]; got != "false" {
				t.Errorf("VolumeContext[%s] = %q; want the StorageClass's false", volumeattr.KeyCacheAffinity, got)
			}
			if setup.mode == volumeattr.ProvisionPrefix && (a.Bucket != s.parent || a.Prefix != "vols/"+name+"/") {
				t.Errorf("prefix volume at %s/%s; want %s/vols/%s/", a.Bucket, a.Prefix, s.parent, name)
			}

			// Idempotent: same name, same ID; a capacity it does not fit is a conflict.
			again, err := h.controller.CreateVolume(ctx, req)
			if err != nil || again.GetVolume().GetVolumeId() != vol.GetVolumeId() {
				t.Errorf("second CreateVolume = %v, %v; want the same volume", again, err)
			}
			req2 := &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: rwx(), Parameters: params, Secrets: s.secrets,
				CapacityRange: &csi.CapacityRange{RequiredBytes: 10 << 30, LimitBytes: 10 << 30}}
			_, err = h.controller.CreateVolume(ctx, req2)
			wantCode(t, "CreateVolume with another capacity", err, codes.AlreadyExists)

			// Write through the node's view of the volume.
			data := openVolume(t, s, vol)
			put(t, data, "dir/file", "hello")
			put(t, data, "top", "x")

			validate := func(caps []*csi.VolumeCapability) (*csi.ValidateVolumeCapabilitiesResponse, error) {
				return h.controller.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{
					VolumeId: vol.GetVolumeId(), VolumeContext: vol.GetVolumeContext(), VolumeCapabilities: caps, Secrets: s.secrets})
			}
			if resp, err := validate(rwx()); err != nil || resp.GetConfirmed() == nil {
				t.Errorf("ValidateVolumeCapabilities(rwx) = %v, %v; want confirmed", resp, err)
			}
			if resp, err := validate([]*csi.VolumeCapability{mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER)}); err != nil || resp.GetConfirmed() != nil || resp.GetMessage() == "" {
				t.Errorf("ValidateVolumeCapabilities(MULTI_NODE_SINGLE_WRITER) = %v, %v; want not confirmed, with a reason", resp, err)
			}
			// Without the volume context the secret's endpoint is used.
			if resp, err := h.controller.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{
				VolumeId: vol.GetVolumeId(), VolumeCapabilities: rwx(), Secrets: s.secrets}); err != nil || resp.GetConfirmed() == nil {
				t.Errorf("ValidateVolumeCapabilities without context = %v, %v", resp, err)
			}

			del := &csi.DeleteVolumeRequest{VolumeId: vol.GetVolumeId(), Secrets: s.secrets}
			if _, err := h.controller.DeleteVolume(ctx, del); err != nil {
				t.Fatalf("DeleteVolume: %v", err)
			}
			if _, err := h.controller.DeleteVolume(ctx, del); err != nil {
				t.Errorf("second DeleteVolume: %v", err)
			}
			_, err = validate(rwx())
			wantCode(t, "ValidateVolumeCapabilities after delete", err, codes.NotFound)
			assertGone(t, s, a, setup.mode)
		})
	}
}

// assertGone checks that a deleted volume's data, and a bucket volume's
// bucket, are gone while the parent bucket of a prefix volume stays.
func assertGone(t *testing.T, s store, a volumeattr.Attributes, mode volumeattr.Provisioning) {
	t.Helper()
	ctx := t.Context()
	if mode == volumeattr.ProvisionBucket {
		admin, err := backend.OpenAdmin(ctx, a.StoreConfig(), s.creds)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = admin.Close() }()
		if ok, err := admin.BucketExists(ctx, a.Bucket); err != nil || ok {
			t.Errorf("bucket %s still exists (%v)", a.Bucket, err)
		}
		return
	}
	parent, err := backend.Open(ctx, s.cfg, s.creds)
	if err != nil {
		t.Fatalf("the parent bucket is gone: %v", err)
	}
	defer func() { _ = parent.Close() }()
	if keys, _ := objstoretest.Keys(t, objstore.WithPrefix(parent, a.Prefix), objstore.ListOptions{}); len(keys) > 0 {
		t.Errorf("objects left under %s: %q", a.Prefix, keys)
	}
	if _, err := parent.Stat(ctx, a.Prefix); err == nil {
		t.Errorf("the marker %s is still there", a.Prefix)
	}
}

func TestReclaimRetain(t *testing.T) {
	for _, mode := range []volumeattr.Provisioning{volumeattr.ProvisionBucket, volumeattr.ProvisionPrefix} {
		t.Run(string(mode), func(t *testing.T) {
			s := minioStore(t)
			h := startDriver(t, ControllerConfig{})
			params := with(s.params, volumeattr.KeyReclaim, "retain", volumeattr.KeyProvisioning, string(mode))
			if mode == volumeattr.ProvisionPrefix {
				params[mountspec.KeyBucket] = s.parent
			}
			resp, err := h.controller.CreateVolume(t.Context(), &csi.CreateVolumeRequest{Name: uniqueName("pvc-"), VolumeCapabilities: rwx(), Parameters: params, Secrets: s.secrets})
			if err != nil {
				t.Fatal(err)
			}
			data := openVolume(t, s, resp.GetVolume())
			put(t, data, "keep/me", "data")
			// DeleteVolume of a retained volume succeeds without even a secret.
			if _, err := h.controller.DeleteVolume(t.Context(), &csi.DeleteVolumeRequest{VolumeId: resp.GetVolume().GetVolumeId()}); err != nil {
				t.Fatalf("DeleteVolume: %v", err)
			}
			if keys, _ := objstoretest.Keys(t, data, objstore.ListOptions{}); !slices.Contains(keys, "keep/me") {
				t.Errorf("retained data gone: %q", keys)
			}
		})
	}
}

func TestDeleteVolumeErrors(t *testing.T) {
	s := minioStore(t)
	h := startDriver(t, ControllerConfig{})
	strict := startDriver(t, ControllerConfig{RequireSecret: true})
	resp, err := h.controller.CreateVolume(t.Context(), &csi.CreateVolumeRequest{Name: uniqueName("pvc-"), VolumeCapabilities: rwx(),
		Parameters: with(s.params, mountspec.KeyBucket, s.parent), Secrets: s.secrets})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetVolume().GetVolumeId()
	other := testserver.NewMinIO(t) // another store, with the same credentials
	cases := []struct {
		name    string
		h       *harness
		id      string
		secrets map[string]string
		code    codes.Code
	}{
		{"no ID", h, "", s.secrets, codes.InvalidArgument},
		{"not a Basin ID", h, "fake-vol-id", s.secrets, codes.OK},
		{"well-formed ID of nothing", h, "s3/1pds/us-east-1/" + endpointFingerprint(s.secrets[volumeattr.SecretEndpoint]) + "/" + s.parent + "/nothing-here/", s.secrets, codes.OK},
		{"missing bucket", h, "s3/1bds/us-east-1/" + endpointFingerprint(s.secrets[volumeattr.SecretEndpoint]) + "/" + uniqueName("gone-") + "/", s.secrets, codes.OK},
		{"secret without endpoint", h, id, with(s.secrets, volumeattr.SecretEndpoint, ""), codes.FailedPrecondition},
		{"secret with another endpoint", h, id, with(s.secrets, volumeattr.SecretEndpoint, other.Endpoint), codes.FailedPrecondition},
		{"wrong credentials", h, id, with(s.secrets, volumeattr.SecretSecretAccessKey, "not-the-secret-key-0000"), codes.PermissionDenied},
		{"bad secret", h, id, with(s.secrets, volumeattr.SecretAccessKeyID, ""), codes.InvalidArgument},
		{"missing secret, secrets required", strict, id, map[string]string{volumeattr.SecretEndpoint: s.secrets[volumeattr.SecretEndpoint]}, codes.InvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.h.controller.DeleteVolume(t.Context(), &csi.DeleteVolumeRequest{VolumeId: c.id, Secrets: c.secrets})
			wantCode(t, "DeleteVolume", err, c.code)
		})
	}
	// The volume survived every failed attempt.
	if _, err := h.controller.ValidateVolumeCapabilities(t.Context(), &csi.ValidateVolumeCapabilitiesRequest{
		VolumeId: id, VolumeCapabilities: rwx(), Secrets: s.secrets}); err != nil {
		t.Errorf("volume gone after failed deletes: %v", err)
	}
}

func TestValidateVolumeCapabilitiesErrors(t *testing.T) {
	s := minioStore(t)
	h := startDriver(t, ControllerConfig{})
	fp := endpointFingerprint(s.secrets[volumeattr.SecretEndpoint])
	resp, err := h.controller.CreateVolume(t.Context(), &csi.CreateVolumeRequest{Name: uniqueName("pvc-"), VolumeCapabilities: rwx(),
		Parameters: with(s.params, mountspec.KeyBucket, s.parent), Secrets: s.secrets})
	if err != nil {
		t.Fatal(err)
	}
	vol := resp.GetVolume()
	cases := []struct {
		name string
		req  *csi.ValidateVolumeCapabilitiesRequest
		code codes.Code
	}{
		{"no ID", &csi.ValidateVolumeCapabilitiesRequest{VolumeCapabilities: rwx(), Secrets: s.secrets}, codes.InvalidArgument},
		{"no capabilities", &csi.ValidateVolumeCapabilitiesRequest{VolumeId: vol.GetVolumeId(), Secrets: s.secrets}, codes.InvalidArgument},
		{"not a Basin ID", &csi.ValidateVolumeCapabilitiesRequest{VolumeId: "fake-vol-id", VolumeCapabilities: rwx(), Secrets: s.secrets}, codes.NotFound},
		{"missing prefix", &csi.ValidateVolumeCapabilitiesRequest{VolumeId: "s3/1pds/us-east-1/" + fp + "/" + s.parent + "/nothing/", VolumeCapabilities: rwx(), Secrets: s.secrets}, codes.NotFound},
		{"missing bucket", &csi.ValidateVolumeCapabilitiesRequest{VolumeId: "s3/1bds/us-east-1/" + fp + "/" + uniqueName("gone-") + "/", VolumeCapabilities: rwx(), Secrets: s.secrets}, codes.NotFound},
		{"context of another volume", &csi.ValidateVolumeCapabilitiesRequest{VolumeId: vol.GetVolumeId(), VolumeCapabilities: rwx(), Secrets: s.secrets,
			VolumeContext: with(vol.GetVolumeContext(), mountspec.KeyPrefix, "elsewhere/")}, codes.InvalidArgument},
		{"bad context", &csi.ValidateVolumeCapabilitiesRequest{VolumeId: vol.GetVolumeId(), VolumeCapabilities: rwx(), Secrets: s.secrets,
			VolumeContext: with(vol.GetVolumeContext(), mountspec.KeyCacheSize, "much")}, codes.InvalidArgument},
		{"wrong credentials", &csi.ValidateVolumeCapabilitiesRequest{VolumeId: vol.GetVolumeId(), VolumeCapabilities: rwx(),
			Secrets: with(s.secrets, volumeattr.SecretSecretAccessKey, "not-the-secret-key-0000")}, codes.PermissionDenied},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.controller.ValidateVolumeCapabilities(t.Context(), c.req)
			wantCode(t, "ValidateVolumeCapabilities", err, c.code)
		})
	}
	// A read-only volume confirms reader modes only.
	ro, err := h.controller.CreateVolume(t.Context(), &csi.CreateVolumeRequest{Name: uniqueName("pvc-"),
		VolumeCapabilities: []*csi.VolumeCapability{mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY)},
		Parameters:         with(s.params, mountspec.KeyBucket, s.parent, mountspec.KeyReadOnly, "true"), Secrets: s.secrets})
	if err != nil {
		t.Fatal(err)
	}
	v, err := h.controller.ValidateVolumeCapabilities(t.Context(), &csi.ValidateVolumeCapabilitiesRequest{VolumeId: ro.GetVolume().GetVolumeId(),
		VolumeContext: ro.GetVolume().GetVolumeContext(), VolumeCapabilities: rwx(), Secrets: s.secrets})
	if err != nil || v.GetConfirmed() != nil {
		t.Errorf("read-only volume, RWX: %v, %v; want not confirmed", v, err)
	}
}

// A name whose bucket or prefix holds something that is not this volume
// is a conflict, never adopted.
func TestCreateVolumeNameConflict(t *testing.T) {
	s := minioStore(t)
	h := startDriver(t, ControllerConfig{})
	ctx := t.Context()
	name := uniqueName("pvc-")
	// A record of another volume at the prefix this name maps to.
	parent, err := backend.Open(ctx, s.cfg, s.creds)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = parent.Close() }()
	put(t, parent, prefixSegment(name)+"/", `{"kind":"basin.csi.dev/volume-v1","name":"someone-else","capacityBytes":0}`)
	_, err = h.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: rwx(),
		Parameters: with(s.params, mountspec.KeyBucket, s.parent), Secrets: s.secrets})
	wantCode(t, "CreateVolume over another volume's prefix", err, codes.AlreadyExists)

	// A bucket named like the volume, holding something else at the record key.
	name = uniqueName("pvc-")
	cfg := s.cfg
	cfg.Bucket = bucketName(name)
	createBucket(t, cfg, s.creds)
	b, err := backend.Open(ctx, cfg, s.creds)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	put(t, b, bucketRecordKey, "not json")
	_, err = h.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: rwx(), Parameters: s.params, Secrets: s.secrets})
	wantCode(t, "CreateVolume over a foreign bucket", err, codes.AlreadyExists)

	// An empty directory marker (a folder someone made) is adopted.
	name = uniqueName("pvc-")
	put(t, parent, prefixSegment(name)+"/", "")
	if _, err := h.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: rwx(),
		Parameters: with(s.params, mountspec.KeyBucket, s.parent), Secrets: s.secrets}); err != nil {
		t.Errorf("CreateVolume over an empty marker: %v", err)
	}
}

// An unreachable store is Unavailable, so the provisioner retries.
func TestCreateVolumeUnavailable(t *testing.T) {
	srv := testserver.NewMinIO(t)
	secrets := map[string]string{volumeattr.SecretAccessKeyID: srv.AccessKey, volumeattr.SecretSecretAccessKey: srv.SecretKey, volumeattr.SecretEndpoint: srv.Endpoint}
	srv.Stop()
	h := startDriver(t, ControllerConfig{})
	_, err := h.controller.CreateVolume(context.Background(), &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: rwx(),
		Parameters: map[string]string{mountspec.KeyPathStyle: "true", mountspec.KeyRegion: srv.Region}, Secrets: secrets})
	wantCode(t, "CreateVolume against a stopped MinIO", err, codes.Unavailable)
}

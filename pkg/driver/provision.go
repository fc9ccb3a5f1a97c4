package driver

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/mountspec"
)

func (c *Controller) createVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.Volume, error) {
	name := req.GetName()
	if name == "" {
		return nil, fmt.Errorf("%w: volume name is empty", ErrInvalidRequest)
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, fmt.Errorf("%w: no volume capabilities given", ErrInvalidRequest)
	}
	if req.GetVolumeContentSource() != nil {
		return nil, fmt.Errorf("%w: volume content sources (snapshots, clones) are not supported", ErrInvalidRequest)
	}
	capacity, err := requestedCapacity(req.GetCapacityRange())
	if err != nil {
		return nil, err
	}
	attrs, err := volumeattr.Parse(req.GetParameters(), req.GetSecrets())
	if err != nil {
		return nil, err
	}
	if err := checkCapabilities(req.GetVolumeCapabilities(), attrs.ReadOnly); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	vid, attrs, err := planVolume(name, attrs)
	if err != nil {
		return nil, err
	}
	if vid.Reclaim == volumeattr.ReclaimDelete && attrs.Secrets.Endpoint != attrs.Endpoint {
		return nil, fmt.Errorf("%w: reclaim=delete and endpoint %q is set in the StorageClass parameters only: DeleteVolume receives just the volume ID and the provisioner secret, so put the endpoint into the secret (key %q), or use reclaim=retain",
			ErrInvalidRequest, attrs.Endpoint, volumeattr.SecretEndpoint)
	}
	id := vid.String()
	if len(id) > maxVolumeIDLen {
		return nil, fmt.Errorf("%w: the volume ID %q would be longer than %d bytes: use a shorter bucket or prefix", ErrInvalidRequest, id, maxVolumeIDLen)
	}
	creds, err := c.credentials(attrs.Backend, attrs.Secrets)
	if err != nil {
		return nil, err
	}
	release, err := c.begin(name)
	if err != nil {
		return nil, err
	}
	defer release()

	cn := conn{cfg: attrs.StoreConfig(), creds: creds}
	rec, err := cn.ensureVolume(ctx, vid, name, capacity, req.GetCapacityRange())
	if err != nil {
		return nil, explainCredentials(err, attrs.Backend, attrs.Secrets)
	}
	klog.InfoS("volume ready", "volume", id, "name", name, "capacityBytes", rec.CapacityBytes)
	return &csi.Volume{VolumeId: id, CapacityBytes: rec.CapacityBytes, VolumeContext: volumeattr.Encode(attrs)}, nil
}

// planVolume resolves where a new volume's data goes: a bucket named after
// the volume, or a prefix named after it inside the configured bucket and
// prefix. It returns the volume ID and the attributes with the resolved
// bucket and prefix (the VolumeContext).
func planVolume(name string, a volumeattr.Attributes) (volumeID, volumeattr.Attributes, error) {
	switch a.Provisioning {
	case volumeattr.ProvisionBucket:
		if a.Bucket != "" || a.Prefix != "" {
			return volumeID{}, a, fmt.Errorf("%w: %s=%s names the bucket after the volume: remove %s and %s from the StorageClass, or use %s=%s",
				volumeattr.ErrInvalid, volumeattr.KeyProvisioning, volumeattr.ProvisionBucket,
				mountspec.KeyBucket, mountspec.KeyPrefix, volumeattr.KeyProvisioning, volumeattr.ProvisionPrefix)
		}
		a.Bucket = bucketName(name)
	case volumeattr.ProvisionPrefix:
		a.Prefix += prefixSegment(name) + "/"
	}
	return volumeID{
		Backend:      a.Backend,
		Provisioning: a.Provisioning,
		Reclaim:      a.Reclaim,
		PathStyle:    a.PathStyle,
		Region:       a.Region,
		EndpointFP:   endpointFingerprint(a.Endpoint),
		Bucket:       a.Bucket,
		Prefix:       a.Prefix,
	}, a, nil
}

func (c *Controller) deleteVolume(ctx context.Context, req *csi.DeleteVolumeRequest) error {
	id := req.GetVolumeId()
	if id == "" {
		return fmt.Errorf("%w: volume ID is empty", ErrInvalidRequest)
	}
	vid, err := parseVolumeID(id)
	if err != nil {
		klog.InfoS("not a Basin volume ID: nothing to delete", "volume", id, "reason", err)
		return nil
	}
	if vid.Reclaim == volumeattr.ReclaimRetain {
		klog.InfoS("volume data retained (reclaim=retain)", "volume", id)
		return nil
	}
	release, err := c.begin(id)
	if err != nil {
		return err
	}
	defer release()
	secrets, err := parseSecretsFor(vid.Backend, req.GetSecrets())
	if err != nil {
		return err
	}
	cn, err := c.connect(vid, secrets.Endpoint, secrets)
	if err != nil {
		return err
	}
	return explainCredentials(cn.deleteData(ctx, vid), vid.Backend, secrets)
}

// capacityRange is *csi.CapacityRange, whose getters accept nil.
type capacityRange interface {
	GetRequiredBytes() int64
	GetLimitBytes() int64
}

// requestedCapacity is the capacity to record for a capacity range: the
// required bytes, else the limit, else 0 (unknown).
func requestedCapacity(r capacityRange) (int64, error) {
	req, limit := r.GetRequiredBytes(), r.GetLimitBytes()
	switch {
	case req < 0 || limit < 0:
		return 0, fmt.Errorf("%w: negative capacity", ErrOutOfRange)
	case limit > 0 && req > limit:
		return 0, fmt.Errorf("%w: required bytes %d exceed the limit %d", ErrOutOfRange, req, limit)
	case req > 0:
		return req, nil
	}
	return limit, nil
}

// fitsRange reports whether a recorded capacity satisfies a capacity
// range (nil: any).
func fitsRange(capacity int64, r capacityRange) bool {
	req, limit := r.GetRequiredBytes(), r.GetLimitBytes()
	return (req == 0 || capacity >= req) && (limit == 0 || capacity <= limit)
}

package driver

import (
	"context"
	"fmt"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/objstore"
)

// Controller is the CSI Controller service: it creates and deletes
// volumes (buckets, or prefixes of a bucket) in the object store with the
// credentials of the provisioner secret.
type Controller struct {
	csi.UnimplementedControllerServer

	// constant
	cfg ControllerConfig

	mu sync.Mutex // guards busy
	// busy holds the names (CreateVolume) and IDs (DeleteVolume) of the
	// volumes an operation is running for.
	busy map[string]bool
}

var _ Service = (*Controller)(nil)

// NewController returns the Controller service.
func NewController(cfg ControllerConfig) (*Controller, error) {
	return &Controller{cfg: cfg, busy: map[string]bool{}}, nil
}

func (c *Controller) register(s *grpc.Server) { csi.RegisterControllerServer(s, c) }

func (c *Controller) pluginCapabilities() []*csi.PluginCapability {
	return []*csi.PluginCapability{{
		Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{
			Type: csi.PluginCapability_Service_CONTROLLER_SERVICE,
		}},
	}}
}

// probe: the controller needs nothing but the requests' secrets, so there
// is nothing to check ahead of them.
func (c *Controller) probe(context.Context) (ready bool, err error) { return true, nil }

// begin marks key busy; the caller must call the returned release.
func (c *Controller) begin(key string) (release func(), err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy[key] {
		return nil, fmt.Errorf("%w for volume %q; retry later", ErrBusy, key)
	}
	c.busy[key] = true
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.busy, key)
	}, nil
}

// ControllerGetCapabilities lists the implemented RPCs.
func (c *Controller) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: controllerCapabilities()}, nil
}

// CreateVolume creates a bucket (provisioning=bucket) or a prefix inside
// an existing bucket (provisioning=prefix) for the volume, or returns the
// one a previous call with the same name created.
func (c *Controller) CreateVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	vol, err := c.createVolume(ctx, req)
	if err != nil {
		return nil, redact(toStatus(err), secretValues(req.GetSecrets()))
	}
	return &csi.CreateVolumeResponse{Volume: vol}, nil
}

// DeleteVolume removes the volume's data when its reclaim policy is
// delete. A volume that does not exist, or an ID that is not Basin's, is
// success (CSI: DeleteVolume is idempotent).
func (c *Controller) DeleteVolume(ctx context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	if err := c.deleteVolume(ctx, req); err != nil {
		return nil, redact(toStatus(err), secretValues(req.GetSecrets()))
	}
	return &csi.DeleteVolumeResponse{}, nil
}

// ValidateVolumeCapabilities confirms the capabilities a volume can serve:
// mount access in the supported modes (reader modes only for readOnly
// volumes). The volume must exist.
func (c *Controller) ValidateVolumeCapabilities(ctx context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	resp, err := c.validate(ctx, req)
	if err != nil {
		return nil, redact(toStatus(err), secretValues(req.GetSecrets()))
	}
	return resp, nil
}

func (c *Controller) validate(ctx context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, fmt.Errorf("%w: volume ID is empty", ErrInvalidRequest)
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, fmt.Errorf("%w: no volume capabilities given", ErrInvalidRequest)
	}
	vid, err := parseVolumeID(req.GetVolumeId())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrVolumeNotFound, err)
	}
	secrets, endpoint, readOnly := volumeattr.Secrets{}, "", false
	if vc := req.GetVolumeContext(); len(vc) > 0 {
		a, err := volumeattr.Parse(vc, req.GetSecrets())
		if err != nil {
			return nil, err
		}
		if a.Backend != vid.Backend || a.Bucket != vid.Bucket || a.Prefix != vid.Prefix {
			return nil, fmt.Errorf("%w: the volume context names another volume than the volume ID", ErrInvalidRequest)
		}
		secrets, endpoint, readOnly = a.Secrets, a.Endpoint, a.ReadOnly
	} else {
		if secrets, err = parseSecretsFor(vid.Backend, req.GetSecrets()); err != nil {
			return nil, err
		}
		endpoint = secrets.Endpoint
	}
	cn, err := c.connect(vid, endpoint, secrets)
	if err != nil {
		return nil, err
	}
	exists, err := cn.volumeExists(ctx, vid)
	if err != nil {
		return nil, explainCredentials(err, vid.Backend, secrets)
	}
	if !exists {
		return nil, fmt.Errorf("%w: volume %q", ErrVolumeNotFound, req.GetVolumeId())
	}
	if err := checkCapabilities(req.GetVolumeCapabilities(), readOnly); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext:      req.GetVolumeContext(),
		VolumeCapabilities: req.GetVolumeCapabilities(),
		Parameters:         req.GetParameters(),
	}}, nil
}

// parseSecretsFor reads a secret map for a backend.
func parseSecretsFor(b objstore.Backend, m map[string]string) (volumeattr.Secrets, error) {
	s, err := volumeattr.ParseSecrets(m)
	if err != nil {
		return volumeattr.Secrets{}, err
	}
	if err := s.CheckBackend(b); err != nil {
		return volumeattr.Secrets{}, err
	}
	return s, nil
}

// secretValues are the values of a secret map that must never appear in a
// message: everything but the endpoint and region, if long enough that
// replacing them cannot garble a message by accident.
func secretValues(m map[string]string) []string {
	var v []string
	for k, s := range m {
		if k != volumeattr.SecretEndpoint && k != volumeattr.SecretRegion && len(s) >= 6 {
			v = append(v, s)
		}
	}
	return v
}

// logDeleted records what DeleteVolume removed.
func logDeleted(vid volumeID, objects int, bucketRemoved bool) {
	klog.InfoS("volume data deleted", "volume", vid.String(), "objects", objects, "bucketRemoved", bucketRemoved)
}

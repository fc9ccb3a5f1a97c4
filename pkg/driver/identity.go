package driver

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// identity is the CSI Identity service.
type identity struct {
	csi.UnimplementedIdentityServer
	// constant
	name, version string
	services      []Service
}

// GetPluginInfo reports the driver name and version.
func (i *identity) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: i.name, VendorVersion: i.version}, nil
}

// GetPluginCapabilities collects the capabilities of the services served.
func (i *identity) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	var caps []*csi.PluginCapability
	for _, s := range i.services {
		caps = append(caps, s.pluginCapabilities()...)
	}
	return &csi.GetPluginCapabilitiesResponse{Capabilities: caps}, nil
}

// Probe asks every service whether it can work now. A service that cannot
// fails the probe with its error's code (the liveness probe restarts the
// container). A service still starting (the node taking its volumes back
// after a restart) makes the answer ready=false: healthy, initialising,
// as CSI defines it; calls for volumes not taken back yet wait for them.
func (i *identity) Probe(ctx context.Context, _ *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	ready := true
	for _, s := range i.services {
		r, err := s.probe(ctx)
		if err != nil {
			return nil, toStatus(err)
		}
		ready = ready && r
	}
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(ready)}, nil
}

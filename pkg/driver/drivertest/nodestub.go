package drivertest

import (
	"context"
	"net"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
)

// NodeStub is a CSI Node service that has no volumes. It lets csi-sanity
// run its Controller specs against a controller alone: sanity's cleanup
// calls NodeGetCapabilities and NodeUnpublishVolume for every volume it
// created, whichever specs ran. NodeStub advertises no capability,
// answers NodeGetInfo with NodeID and treats every unpublish as done
// (the volume was never published here). Everything else is
// Unimplemented. It is not a node plugin: never run it where a real one
// is expected.
type NodeStub struct {
	csi.UnimplementedNodeServer
	// NodeID is returned by NodeGetInfo.
	NodeID string
}

var _ csi.NodeServer = (*NodeStub)(nil)

// NodeGetCapabilities advertises nothing (no staging, no stats).
func (n *NodeStub) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{}, nil
}

// NodeGetInfo names the stub's node.
func (n *NodeStub) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: n.NodeID}, nil
}

// NodeUnpublishVolume succeeds: nothing is ever published on the stub.
func (n *NodeStub) NodeUnpublishVolume(context.Context, *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// ServeNodeStub serves a NodeStub on lis until ctx is done, then stops
// and closes lis.
func ServeNodeStub(ctx context.Context, lis net.Listener, nodeID string) error {
	srv := grpc.NewServer()
	csi.RegisterNodeServer(srv, &NodeStub{NodeID: nodeID})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		srv.GracefulStop()
		return nil
	}
}

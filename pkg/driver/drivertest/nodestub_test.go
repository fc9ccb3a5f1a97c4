package drivertest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

func TestNodeStub(t *testing.T) {
	dir, err := os.MkdirTemp("", "basin-stub-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "node.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeNodeStub(ctx, lis, "n1") }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := csi.NewNodeClient(conn)
	info, err := c.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil || info.GetNodeId() != "n1" {
		t.Errorf("NodeGetInfo = %v, %v", info, err)
	}
	caps, err := c.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	if err != nil || len(caps.GetCapabilities()) != 0 {
		t.Errorf("NodeGetCapabilities = %v, %v; want none", caps, err)
	}
	if _, err := c.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: "v", TargetPath: "/x"}); err != nil {
		t.Errorf("NodeUnpublishVolume: %v", err)
	}
	if _, err := c.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "v"}); status.Code(err) != codes.Unimplemented {
		t.Errorf("NodePublishVolume: %v; want Unimplemented", err)
	}
}

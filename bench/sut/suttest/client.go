package suttest

import (
	"context"
	"os"

	"github.com/basin-csi/basin/bench/direct"
	"github.com/basin-csi/basin/bench/scenario"
	"github.com/basin-csi/basin/bench/sut"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/filestore"
)

// Client is a Fake that is also a sut.Client: it plays the direct
// client's workloads (bench/direct) in this process against the directory
// as a bucket (filestore), and gives this process as its PID.
type Client struct {
	*Fake
	store objstore.Store
}

var _ sut.Client = (*Client)(nil)

// NewClient returns a client named name over the directory root
// (absolute).
func NewClient(name, root string, backend sut.Backend) (*Client, error) {
	store, err := filestore.New(objstore.Config{Bucket: root})
	if err != nil {
		return nil, err
	}
	return &Client{Fake: New(name, root, backend), store: store}, nil
}

// Do implements sut.Client.
func (c *Client) Do(ctx context.Context, req direct.Request) (scenario.Measure, error) {
	return direct.Do(ctx, c.store, req)
}

// PID implements sut.System: this process, which runs the workloads.
func (c *Client) PID() int { return os.Getpid() }

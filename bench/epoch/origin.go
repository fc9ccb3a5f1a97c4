package epoch

import (
	"context"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/servers"
	"github.com/basin-csi/basin/bench/sut"
	"github.com/basin-csi/basin/bench/wanproxy"
	"github.com/basin-csi/basin/pkg/objstore"
)

// OriginConfig says where and what the origin serves.
type OriginConfig struct {
	MinIO  string // the minio binary
	Dir    string // where its tmpfs is mounted
	Bucket string
	Sets   []dataset.Set // written unless present
	Proxy  wanproxy.Config
	// Work is the Env's WorkDir (the mounts' private directories), Tools
	// its ToolsBin.
	Work, Tools string
}

// Origin is a MinIO with its data in a tmpfs behind the WAN emulator.
type Origin struct {
	Server *servers.Server
	Proxy  *wanproxy.Proxy
	// Env points the systems under test at the bucket through the proxy,
	// with the server's root key.
	Env     sut.Env
	Config  objstore.Config // the bucket, addressed without the proxy
	Creds   objstore.Credentials
	unmount func()
}

// StartOrigin mounts a tmpfs at c.Dir sized for the sets (plus 1 GiB),
// starts MinIO on it and the WAN emulator in front, and writes the sets.
func StartOrigin(ctx context.Context, c OriginConfig) (*Origin, error) {
	room := int64(1 << 30)
	for _, s := range c.Sets {
		room += s.TotalBytes()
	}
	o := &Origin{Creds: objstore.Credentials{AccessKeyID: servers.MinIOAccessKey, SecretAccessKey: servers.MinIOSecretKey}}
	var err error
	if o.unmount, err = MountTmpfs(c.Dir, room); err != nil {
		return nil, err
	}
	if o.Server, err = servers.StartMinIO(ctx, c.MinIO, c.Dir); err != nil {
		o.Close()
		return nil, err
	}
	pc := c.Proxy
	pc.Upstream = o.Server.Endpoint
	if o.Proxy, err = wanproxy.Start(pc, "127.0.0.1:0"); err != nil {
		o.Close()
		return nil, err
	}
	o.Config = objstore.Config{Backend: objstore.BackendS3, Bucket: c.Bucket, Endpoint: o.Server.Endpoint,
		Region: servers.MinIORegion, PathStyle: true}
	store, err := servers.OpenBucket(ctx, o.Config, o.Creds)
	if err != nil {
		o.Close()
		return nil, err
	}
	defer func() { _ = store.Close() }()
	sink := dataset.StoreSink{Store: store, Name: "s3://" + c.Bucket}
	for _, set := range c.Sets {
		if !dataset.Present(ctx, sink, set) {
			fmt.Printf("writing %s: %d × %d KiB\n", set.Name, set.Files, set.FileSize>>10)
			if _, err := dataset.Write(ctx, sink, set, 16, nil); err != nil {
				o.Close()
				return nil, err
			}
		}
	}
	o.Env = sut.Env{WorkDir: c.Work, ToolsBin: c.Tools,
		S3: sut.S3Target{Endpoint: o.Proxy.URL(), Bucket: c.Bucket, Region: servers.MinIORegion,
			AccessKey: servers.MinIOAccessKey, SecretKey: servers.MinIOSecretKey}}
	return o, nil
}

// Close stops the proxy and the server and unmounts the tmpfs.
func (o *Origin) Close() {
	if o.Proxy != nil {
		_ = o.Proxy.Close()
	}
	if o.Server != nil {
		o.Server.Stop()
	}
	if o.unmount != nil {
		o.unmount()
	}
}

// MountTmpfs mounts a tmpfs of size bytes, mode 0700, at dir.
func MountTmpfs(dir string, size int64) (unmount func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		return nil, fmt.Errorf("tmpfs for a server's data at %s: %w", dir, err)
	}
	return func() { _ = unix.Unmount(dir, 0) }, nil
}

package main

import (
	"context"
	"fmt"

	"github.com/basin-csi/basin/bench/runner"
	"github.com/basin-csi/basin/bench/servers"
	"github.com/basin-csi/basin/pkg/objstore"
)

// The GCS side keeps each data set in a bucket of its own, with the same
// keys as in the S3 side's one bucket, so the scenarios' paths do not
// change. fake-gcs-server's filesystem backend answers a LIST by reading
// the bucket's whole directory and the metadata of every object under
// the prefix. With every data set in one bucket (about 130,000 objects)
// each lookup gcsfuse makes scanned all of them and gcsfuse read 1 file/s,
// a figure of the emulator; with the small-file set alone in its bucket it
// read 196 files/s cold. gcsfuse mounts the bucket of the scenario being
// played (environment.scenario, before the scenario's first mount).

// setBucket is the bucket of data set name on a side with a bucket per set.
func setBucket(name string) string { return bucket + "-" + name }

// setBuckets are one server's buckets, opened on first use.
type setBuckets struct {
	// constant
	oc    objstore.Config // Bucket unset
	creds objstore.Credentials

	stores  map[string]objstore.Store
	current string // the bucket of the scenario being played
}

func newSetBuckets(oc objstore.Config, creds objstore.Credentials) *setBuckets {
	return &setBuckets{oc: oc, creds: creds, stores: map[string]objstore.Store{}, current: bucket}
}

// open returns the Store of bucket name, creating the bucket if needed.
func (b *setBuckets) open(ctx context.Context, name string) (objstore.Store, error) {
	if st, ok := b.stores[name]; ok {
		return st, nil
	}
	oc := b.oc
	oc.Bucket = name
	st, err := servers.OpenBucket(ctx, oc, b.creds)
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", name, err)
	}
	b.stores[name] = st
	return st, nil
}

func (b *setBuckets) close() {
	for _, st := range b.stores {
		_ = st.Close()
	}
}

// scenario makes the bucket of scenario n's data set the GCS side's
// current one (the only side with a bucket per set): what gcsfuse mounts,
// and what the durability checks and the cleanup read.
func (e *environment) scenario(ctx context.Context, n int) error {
	sd := &e.gcs
	if sd.buckets == nil || sd.err != nil {
		return nil
	}
	name := setBucket(runner.ScenarioSet(e.cfg.run.Sets, n).Name)
	st, err := sd.buckets.open(ctx, name)
	if err != nil {
		return err
	}
	sd.store, sd.buckets.current = st, name
	return nil
}

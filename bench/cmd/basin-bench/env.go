package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/basin-csi/basin/bench/dataset"
	"github.com/basin-csi/basin/bench/runner"
	"github.com/basin-csi/basin/bench/scenario"
	"github.com/basin-csi/basin/bench/servers"
	"github.com/basin-csi/basin/bench/sut"
	"github.com/basin-csi/basin/bench/wanproxy"
	"github.com/basin-csi/basin/pkg/objstore"
)

// bucket is the benchmark bucket's name on both servers.
const bucket = "basin-bench"

// side is one object-store server with the WAN proxy in front of it and a
// direct Store (not through the proxy) for setup, durability checks and
// cleanup, so those never show in the proxy's counters.
type side struct {
	server *servers.Server
	proxy  *wanproxy.Proxy
	// store is the bucket of the scenario being played (the S3 side has
	// one bucket for all of them).
	store objstore.Store
	// buckets is set on a side that keeps each data set in a bucket of
	// its own (setbuckets.go); store is then one of them.
	buckets *setBuckets
	// err is why this side could not be set up; its systems are n/a.
	err error
}

func (s *side) close() {
	if s.buckets != nil {
		s.buckets.close()
	} else if s.store != nil {
		_ = s.store.Close()
	}
	if s.proxy != nil {
		_ = s.proxy.Close()
	}
	if s.server != nil {
		s.server.Stop()
	}
}

// environment is everything the systems under test run against.
type environment struct {
	cfg       config
	localRoot string
	s3, gcs   side
}

func (e *environment) close() {
	e.s3.close()
	e.gcs.close()
}

// setup starts the servers and proxies the selected systems need and
// writes the data sets. A side that cannot start is recorded, not fatal.
func setup(ctx context.Context, cfg config, logf func(string, ...any)) (*environment, error) {
	e := &environment{cfg: cfg, localRoot: filepath.Join(cfg.workDir, "local")}
	if err := os.MkdirAll(e.localRoot, 0o755); err != nil {
		return nil, err
	}
	need := func(names ...string) bool {
		for _, n := range names {
			if slices.Contains(cfg.systems, n) {
				return true
			}
		}
		return false
	}
	if need("basin", "basin-noprefetch", "basin-kernel", "basin-async", "basin-b", "rclone", "s3fs", "direct") {
		e.s3 = startS3(ctx, cfg)
		if e.s3.err != nil {
			logf("S3 side unavailable: %v", e.s3.err)
		}
	}
	if need("gcsfuse") {
		e.gcs = startGCS(ctx, cfg)
		if e.gcs.err != nil {
			logf("GCS side unavailable: %v", e.gcs.err)
		}
	}
	var sets []dataset.Set // the data sets the selected scenarios read
	for n := 1; n <= runner.NumScenarios; n++ {
		set := runner.ScenarioSet(cfg.run.Sets, n)
		if !runner.Writes(n) && (len(cfg.run.Scenarios) == 0 || slices.Contains(cfg.run.Scenarios, n)) &&
			!slices.ContainsFunc(sets, func(s dataset.Set) bool { return s.Name == set.Name }) {
			sets = append(sets, set)
		}
	}
	for _, set := range sets {
		sinks := []dataset.Sink{dataset.DirSink{Root: e.localRoot}}
		for _, sd := range []*side{&e.s3, &e.gcs} {
			if sd.store == nil || sd.err != nil {
				continue
			}
			st, name := sd.store, bucket
			if sd.buckets != nil {
				var err error
				name = setBucket(set.Name)
				if st, err = sd.buckets.open(ctx, name); err != nil {
					return e, err
				}
			}
			sinks = append(sinks, dataset.StoreSink{Store: st, Name: sd.server.Endpoint + "/" + name})
		}
		for _, sink := range sinks {
			logf("data set %s -> %s", set.Name, sink)
			wrote, err := dataset.Write(ctx, sink, set, cfg.uploadJobs, func(set dataset.Set, done int) {
				if done%5000 == 0 {
					logf("  %s: %d/%d", set.Name, done, set.Files)
				}
			})
			if err != nil {
				return e, err
			}
			if !wrote {
				logf("  already present")
			}
		}
	}
	for _, sd := range []*side{&e.s3, &e.gcs} {
		if sd.proxy != nil {
			sd.proxy.SetShaping(true)
		}
	}
	return e, nil
}

func startS3(ctx context.Context, cfg config) side {
	var sd side
	bin := sut.FindBinary(cfg.minioBin, cfg.toolsBin)
	if bin == "" {
		sd.err = fmt.Errorf("minio not found (install: GOBIN=~/.cache/basin-tools/bin go install github.com/minio/minio@latest)")
		return sd
	}
	if sd.server, sd.err = servers.StartMinIO(ctx, bin, cfg.minioDir); sd.err != nil {
		return sd
	}
	pc := cfg.proxy
	pc.Upstream = sd.server.Endpoint
	if sd.proxy, sd.err = wanproxy.Start(pc, "127.0.0.1:0"); sd.err != nil {
		return sd
	}
	sd.proxy.SetShaping(false)
	oc := objstore.Config{Backend: objstore.BackendS3, Bucket: bucket, Endpoint: sd.server.Endpoint,
		Region: servers.MinIORegion, PathStyle: true}
	creds := objstore.Credentials{AccessKeyID: servers.MinIOAccessKey, SecretAccessKey: servers.MinIOSecretKey}
	sd.store, sd.err = servers.OpenBucket(ctx, oc, creds)
	return sd
}

func startGCS(ctx context.Context, cfg config) side {
	var sd side
	bin := sut.FindBinary(cfg.gcsBin, cfg.toolsBin)
	if bin == "" {
		sd.err = fmt.Errorf("fake-gcs-server not found (install: GOBIN=~/.cache/basin-tools/bin go install github.com/fsouza/fake-gcs-server@latest)")
		return sd
	}
	port, err := servers.FreePort()
	if err != nil {
		sd.err = err
		return sd
	}
	// The proxy comes first: the server writes its URL into upload
	// locations, so resumable uploads go through it too.
	pc := cfg.proxy
	pc.Upstream = fmt.Sprintf("http://127.0.0.1:%d", port)
	pc.RewriteHost = true // fake-gcs-server routes XML reads by Host
	if sd.proxy, sd.err = wanproxy.Start(pc, "127.0.0.1:0"); sd.err != nil {
		return sd
	}
	sd.proxy.SetShaping(false)
	if sd.server, sd.err = servers.StartGCS(ctx, bin, filepath.Join(cfg.workDir, "gcs"), port, sd.proxy.URL()); sd.err != nil {
		return sd
	}
	sd.buckets = newSetBuckets(objstore.Config{Backend: objstore.BackendGCS, Endpoint: sd.server.Endpoint}, objstore.Credentials{})
	sd.store, sd.err = sd.buckets.open(ctx, bucket)
	return sd
}

// side returns the side a backend reads, nil for local.
func (e *environment) side(b sut.Backend) *side {
	switch b {
	case sut.BackendS3:
		return &e.s3
	case sut.BackendGCS:
		return &e.gcs
	}
	return nil
}

// sutEnv is what the systems need to reach the buckets.
func (e *environment) sutEnv() sut.Env {
	env := sut.Env{WorkDir: filepath.Join(e.cfg.workDir, "sut"), LocalRoot: e.localRoot, ToolsBin: e.cfg.toolsBin}
	if e.s3.proxy != nil {
		env.S3 = sut.S3Target{Endpoint: e.s3.proxy.URL(), Bucket: bucket, Region: servers.MinIORegion,
			AccessKey: servers.MinIOAccessKey, SecretKey: servers.MinIOSecretKey}
	}
	if e.gcs.proxy != nil {
		env.GCS = sut.GCSTarget{Endpoint: e.gcs.proxy.URL(), Bucket: func() string { return e.gcs.buckets.current }}
	}
	return env
}

// storePID returns the PID of a backend's server, 0 for local.
func (e *environment) storePID(b sut.Backend) int {
	if sd := e.side(b); sd != nil && sd.server != nil {
		return sd.server.PID()
	}
	return 0
}

// traffic returns a backend's proxy counters.
func (e *environment) traffic(b sut.Backend) wanproxy.Snapshot {
	if sd := e.side(b); sd != nil && sd.proxy != nil {
		return sd.proxy.Stats()
	}
	return nil
}

// durable checks written objects in the bucket, directly.
func (e *environment) durable(b sut.Backend) scenario.Durable {
	sd := e.side(b)
	if sd == nil || sd.store == nil {
		return nil
	}
	return func(ctx context.Context, key string, size int64) (bool, error) {
		info, err := sd.store.Stat(ctx, key)
		switch {
		case errors.Is(err, objstore.ErrNotFound):
			return false, nil
		case err != nil:
			return false, err
		}
		return info.Size == size, nil
	}
}

// clean deletes what an earlier run wrote under prefix for sys.
func (e *environment) clean(ctx context.Context, sys sut.System, prefix string) error {
	sd := e.side(sys.Backend())
	if sd == nil {
		return os.RemoveAll(filepath.Join(e.localRoot, filepath.FromSlash(prefix)))
	}
	if sd.store == nil {
		return sd.err
	}
	dir := strings.TrimSuffix(prefix, "/") + "/"
	if _, err := sd.store.DeletePrefix(ctx, dir); err != nil {
		return err
	}
	if sys.Backend() == sut.BackendGCS {
		// fake-gcs-server's filesystem backend cannot store the "dir/"
		// marker objects gcsfuse's mkdir creates (the directory then
		// vanishes), so the directory is made implicit by one object in it.
		_, err := sd.store.Put(ctx, dir+".keep", strings.NewReader(""), objstore.PutOptions{Size: 0})
		return err
	}
	return nil
}

package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/supervisor"
)

// credentialRotation is the FUSE process's side of credential rotation
// (pkg/supervisor/rotate.go) for one store, the bucket or the shared cache
// tier: on SIGHUP it reads the store's rotation file next to the hand-off
// file, switches the store to the credentials there and acknowledges.
type credentialRotation struct {
	// constant
	dir      string               // the hand-off directory; "" without hand-off credentials
	volumeID string               // names the volume in logs
	fileID   string               // names the rotation file: volumeID, or the tier's ID
	what     string               // the store, in logs
	base     objstore.Credentials // from the hand-off file: what the rotation file must supersede
	hup      chan os.Signal

	// Only the watch goroutine (and startCredentials before it) touches
	// these.
	generation uint64               // of the rotation file in use; 0: base
	current    objstore.Credentials // in use
}

// startCredentials returns the credentials the bucket's store starts
// with: those of the hand-off file, or a newer rotation of them; zero
// without any (the default chain). It starts catching SIGHUP at once and
// never stops (signals after watch ended are dropped), so that a rotation
// signal never kills the process.
func startCredentials(cfg mountConfig) (objstore.Credentials, *credentialRotation, error) {
	return startRotation(cfg, cfg.VolumeID, "bucket", cfg.Credentials)
}

// startSharedCacheCredentials is startCredentials for the shared cache
// tier's store (supervisor.SharedCacheRotationID's files).
func startSharedCacheCredentials(cfg mountConfig) (objstore.Credentials, *credentialRotation, error) {
	return startRotation(cfg, supervisor.SharedCacheRotationID(cfg.VolumeID), "shared cache tier", cfg.SharedCacheCredentials)
}

func startRotation(cfg mountConfig, fileID, what string, base objstore.Credentials) (objstore.Credentials, *credentialRotation, error) {
	r := &credentialRotation{volumeID: cfg.VolumeID, fileID: fileID, what: what, hup: make(chan os.Signal, 1)}
	signal.Notify(r.hup, syscall.SIGHUP)
	if cfg.HandoffDir == "" || base.IsZero() {
		return base, r, nil
	}
	r.dir, r.base, r.current = cfg.HandoffDir, base, base
	c, gen, ok, err := supervisor.ReadRotation(r.dir, r.fileID, base)
	switch {
	case err != nil:
		// The staged credentials still work for a while, usually.
		klog.ErrorS(err, "ignoring the rotation file", "volume", r.volumeID, "credentials", r.what)
	case ok:
		r.generation, r.current = gen, c
		klog.InfoS("starting with rotated credentials", "volume", r.volumeID, "credentials", r.what, "generation", gen)
	}
	return r.current, r, nil
}

// watch acknowledges the starting generation and switches store on every
// SIGHUP until ctx ends. store is the adapter backend.Open returned.
func (r *credentialRotation) watch(ctx context.Context, store objstore.Store) {
	if r.generation > 0 {
		r.ack()
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-r.hup:
				r.reload(ctx, store)
			}
		}
	}()
}

// catchUp is reload for a standby given the go-ahead: the serving
// process got the SIGHUPs of rotations while it waited.
func (r *credentialRotation) catchUp(ctx context.Context, store objstore.Store) {
	if r.dir != "" {
		r.reload(ctx, store)
	}
}

// reload switches store to the rotation file's credentials if they are
// newer than those in use.
func (r *credentialRotation) reload(ctx context.Context, store objstore.Store) {
	if r.dir == "" {
		klog.InfoS("SIGHUP ignored: the volume was mounted without hand-off credentials", "volume", r.volumeID, "credentials", r.what)
		return
	}
	c, gen, ok, err := supervisor.ReadRotation(r.dir, r.fileID, r.base)
	switch {
	case err != nil:
		klog.ErrorS(err, "reading the rotation file", "volume", r.volumeID, "credentials", r.what)
		return
	case !ok || gen < r.generation:
		klog.V(2).InfoS("SIGHUP: no newer credentials", "volume", r.volumeID, "credentials", r.what, "generation", r.generation)
		return
	case gen == r.generation || c.Equal(r.current):
		r.generation = gen
		r.ack() // a repeated signal: confirm again
		return
	}
	u, can := store.(objstore.CredentialsUpdater)
	if !can {
		klog.InfoS("SIGHUP ignored: this backend takes no credentials", "volume", r.volumeID, "credentials", r.what)
		return
	}
	if err := u.UpdateCredentials(ctx, c); err != nil {
		klog.ErrorS(err, "switching to new credentials", "volume", r.volumeID, "credentials", r.what, "generation", gen)
		return
	}
	r.generation, r.current = gen, c
	klog.InfoS("switched to new credentials", "volume", r.volumeID, "credentials", r.what, "generation", gen)
	r.ack()
}

func (r *credentialRotation) ack() {
	if err := supervisor.AckRotation(r.dir, r.fileID, r.generation, r.current); err != nil {
		klog.ErrorS(err, "acknowledging new credentials", "volume", r.volumeID, "credentials", r.what, "generation", r.generation)
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/supervisor"
)

// switchingStore records UpdateCredentials calls (the other Store methods
// are not used here).
type switchingStore struct {
	objstore.Store
	mu  sync.Mutex // guards got
	got []objstore.Credentials
}

func (s *switchingStore) UpdateCredentials(_ context.Context, c objstore.Credentials) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, c)
	return nil
}

func (s *switchingStore) updates() []objstore.Credentials {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]objstore.Credentials(nil), s.got...)
}

// writeRotation writes a rotation file as the supervisor does.
func writeRotation(t *testing.T, dir, volumeID string, base, c objstore.Credentials, gen uint64) {
	t.Helper()
	sum := digest(t, base)
	b, err := json.Marshal(map[string]any{"supersedes": sum, "generation": gen,
		"credentials": map[string]string{"accessKeyID": c.AccessKeyID, "secretAccessKey": c.SecretAccessKey}})
	if err != nil {
		t.Fatal(err)
	}
	path, _ := supervisor.RotationFiles(dir, volumeID)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// digest is the supervisor's credentials digest, learned from an ack.
func digest(t *testing.T, c objstore.Credentials) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "d") // created 0700
	if err := supervisor.AckRotation(dir, "probe", 1, c); err != nil {
		t.Fatal(err)
	}
	_, ack := supervisor.RotationFiles(dir, "probe")
	b, err := os.ReadFile(ack)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		t.Fatalf("ack %q", b)
	}
	return f[1]
}

func TestCredentialRotationInTheMountProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "creds")
	a := objstore.Credentials{AccessKeyID: "AK-A", SecretAccessKey: "secret-A-123456"}
	b := objstore.Credentials{AccessKeyID: "AK-B", SecretAccessKey: "secret-B-123456"}
	c := objstore.Credentials{AccessKeyID: "AK-C", SecretAccessKey: "secret-C-123456"}
	const vol = "s3/vol-1"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	handoff := func() mountConfig {
		return mountConfig{Credentials: a, HandoffDir: dir, VolumeID: vol}
	}

	// No rotation file: the handoff file's credentials.
	got, _, err := startCredentials(handoff())
	if err != nil || !got.Equal(a) {
		t.Fatalf("start without rotation = %q, %v", got.AccessKeyID, err)
	}
	// A rotation superseding other credentials is ignored.
	writeRotation(t, dir, vol, c, b, 3)
	if got, _, err = startCredentials(handoff()); err != nil || !got.Equal(a) {
		t.Fatalf("start with a stale rotation = %q, %v", got.AccessKeyID, err)
	}
	// A rotation superseding the handoff's: start with it (a heal).
	writeRotation(t, dir, vol, a, b, 1)
	got, r, err := startCredentials(handoff())
	if err != nil || !got.Equal(b) {
		t.Fatalf("start after a rotation = %q, %v", got.AccessKeyID, err)
	}

	store := &switchingStore{}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r.watch(ctx, store)
	_, ackPath := supervisor.RotationFiles(dir, vol)
	waitAck := func(gen uint64, want objstore.Credentials) { t.Helper(); waitForAck(t, ackPath, gen, want) }
	waitAck(1, b) // acknowledged at start

	// A real SIGHUP to this process: caught, the store switched, acked.
	writeRotation(t, dir, vol, a, c, 2)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitAck(2, c)
	if u := store.updates(); len(u) != 1 || !u[0].Equal(c) {
		t.Fatalf("store updates = %d, want one to C", len(u))
	}
	// A repeated signal without a new generation acks again, no switch.
	if err := os.Remove(ackPath); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitAck(2, c)
	if u := store.updates(); len(u) != 1 {
		t.Errorf("store updates = %d after a repeated signal, want 1", len(u))
	}
}

// waitForAck waits (up to 10 s) until the ack file at path confirms
// generation gen of want.
func waitForAck(t *testing.T, path string, gen uint64, want objstore.Credentials) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if ack, err := os.ReadFile(path); err == nil && string(ack) == ackText(t, gen, want) {
			return
		}
	}
	t.Fatalf("%s: no ack of generation %d", path, gen)
}

func ackText(t *testing.T, gen uint64, c objstore.Credentials) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "d")
	if err := supervisor.AckRotation(dir, "x", gen, c); err != nil {
		t.Fatal(err)
	}
	_, p := supervisor.RotationFiles(dir, "x")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSharedCacheRotationInTheMountProcess: the tier's credentials come
// from their own rotation file, at start (a heal) and on SIGHUP, and
// switch the tier's store only; the bucket's store, whose credentials did
// not rotate, is left alone by the same signal.
func TestSharedCacheRotationInTheMountProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "creds")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	bucketKey := objstore.Credentials{AccessKeyID: "AK-BUCKET", SecretAccessKey: "secret-bucket-123456"}
	a := objstore.Credentials{AccessKeyID: "TIER-A", SecretAccessKey: "secret-tier-A-123456"}
	b := objstore.Credentials{AccessKeyID: "TIER-B", SecretAccessKey: "secret-tier-B-123456"}
	c := objstore.Credentials{AccessKeyID: "TIER-C", SecretAccessKey: "secret-tier-C-123456"}
	const vol = "s3/vol-tier"
	tierID := supervisor.SharedCacheRotationID(vol)
	cfg := mountConfig{Credentials: bucketKey, SharedCacheCredentials: a, HandoffDir: dir, VolumeID: vol}

	writeRotation(t, dir, tierID, a, b, 1) // rotated before this process started
	bucketCreds, bucketRot, err := startCredentials(cfg)
	if err != nil || !bucketCreds.Equal(bucketKey) {
		t.Fatalf("bucket credentials at start = %q, %v", bucketCreds.AccessKeyID, err)
	}
	tierCreds, tierRot, err := startSharedCacheCredentials(cfg)
	if err != nil || !tierCreds.Equal(b) {
		t.Fatalf("tier credentials at start = %q, %v; want the rotated TIER-B", tierCreds.AccessKeyID, err)
	}
	bucketStore, tierStore := &switchingStore{}, &switchingStore{}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	bucketRot.watch(ctx, bucketStore)
	tierRot.watch(ctx, tierStore)
	_, ackPath := supervisor.RotationFiles(dir, tierID)
	waitAck := func(gen uint64, want objstore.Credentials) { t.Helper(); waitForAck(t, ackPath, gen, want) }
	waitAck(1, b)

	writeRotation(t, dir, tierID, a, c, 2)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitAck(2, c)
	if u := tierStore.updates(); len(u) != 1 || !u[0].Equal(c) {
		t.Errorf("tier store updates = %d, want one to TIER-C", len(u))
	}
	if u := bucketStore.updates(); len(u) != 0 {
		t.Errorf("bucket store switched %d times by the tier's rotation, want 0", len(u))
	}
	bucketFile, _ := supervisor.RotationFiles(dir, vol)
	if _, err := os.Stat(bucketFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("bucket rotation file: %v; the tier's rotation must not write it", err)
	}
}

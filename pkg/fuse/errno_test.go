package fuse

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/basin-csi/basin/pkg/mountspec"
	"io/fs"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/testserver"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
	"github.com/basin-csi/basin/pkg/objstore/s3store"
)

func TestToErrno(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("op %q: %w", "k", err) }
	for _, tc := range []struct {
		err  error
		want syscall.Errno
	}{
		{nil, 0},
		{wrap(objstore.ErrNotFound), syscall.ENOENT},
		{wrap(objstore.ErrAccessDenied), syscall.EACCES},
		{wrap(objstore.ErrPreconditionFailed), syscall.ESTALE},
		{wrap(objstore.ErrExists), syscall.EEXIST},
		{wrap(objstore.ErrInvalidKey), syscall.EINVAL},
		{wrap(objstore.ErrInvalidRange), syscall.EINVAL},
		{wrap(objstore.ErrThrottled), syscall.EIO},
		{wrap(objstore.ErrUnavailable), syscall.EIO},
		{wrap(context.DeadlineExceeded), syscall.EIO},
		{wrap(context.Canceled), syscall.EINTR},
		{&fs.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC}, syscall.ENOSPC},
		{errors.New("something else"), syscall.EIO},
		// A sentinel wins over a wrapped errno.
		{fmt.Errorf("%w: %w", objstore.ErrUnavailable, syscall.ECONNREFUSED), syscall.EIO},
	} {
		t.Run(fmt.Sprint(tc.err), func(t *testing.T) {
			if got := toErrno(tc.err); got != tc.want {
				t.Errorf("toErrno(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestErrnoThroughMount checks what system calls see when the bucket fails.
func TestErrnoThroughMount(t *testing.T) {
	store := objstoretest.NewFake()
	put(t, store, "f", []byte("data"))
	put(t, store, "d/x", []byte("x"))
	m := mountStore(t, store, mountSpec{cache: fakeNoLocal, cfg: Config{Spec: mountspec.Spec{OpTimeout: time.Second}}})

	for _, tc := range []struct {
		name string
		op   objstoretest.Op
		err  error
		call func() error
		want syscall.Errno
	}{
		{"stat missing", "", nil, func() error { _, err := os.Stat(path(m, "missing")); return err }, syscall.ENOENT},
		{"stat denied", objstoretest.OpStat, objstore.ErrAccessDenied, func() error { _, err := os.Stat(path(m, "f2")); return err }, syscall.EACCES},
		{"readdir denied", objstoretest.OpList, objstore.ErrAccessDenied, func() error { _, err := os.ReadDir(path(m, "d")); return err }, syscall.EACCES},
		{"read throttled", objstoretest.OpRead, objstore.ErrThrottled, func() error { _, err := os.ReadFile(path(m, "f")); return err }, syscall.EIO},
		{"write unavailable", objstoretest.OpPut, objstore.ErrUnavailable, func() error { return os.WriteFile(path(m, "w"), []byte("w"), 0o644) }, syscall.EIO},
		{"unlink denied", objstoretest.OpDelete, objstore.ErrAccessDenied, func() error { return os.Remove(path(m, "f")) }, syscall.EACCES},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.op != "" {
				store.SetError(tc.op, tc.err)
				defer store.SetError(tc.op, nil)
			}
			_, err := within(t, tc.name, func() (struct{}, error) { return struct{}{}, tc.call() })
			if got := errnoOf(err); got != tc.want {
				t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
			}
		})
	}
}

// TestHungBucketTimesOut: a bucket that never answers yields EIO after the
// op timeout instead of a hung system call.
func TestHungBucketTimesOut(t *testing.T) {
	const opTimeout = time.Second
	store := objstoretest.NewFake()
	put(t, store, "f", []byte("data"))
	m := mountStore(t, store, mountSpec{cache: fakeNoLocal, cfg: Config{Spec: mountspec.Spec{OpTimeout: opTimeout}}})
	must(t, "stat", func() (os.FileInfo, error) { return os.Stat(path(m, "f")) })
	store.SetHook(func(ctx context.Context, _ objstoretest.Op, _ string) error {
		<-ctx.Done()
		return ctx.Err()
	})
	defer store.SetHook(nil)
	for name, call := range map[string]func() error{
		"read":    func() error { _, err := os.ReadFile(path(m, "f")); return err },
		"lookup":  func() error { _, err := os.Stat(path(m, "other")); return err },
		"readdir": func() error { _, err := os.ReadDir(m.dir); return err },
	} {
		start := time.Now()
		_, err := within(t, name, func() (struct{}, error) { return struct{}{}, call() })
		if errnoOf(err) != syscall.EIO {
			t.Errorf("%s on a hung bucket: %v, want EIO", name, err)
		}
		if d := time.Since(start); d > opTimeout+5*time.Second {
			t.Errorf("%s took %v with an op timeout of %v", name, d, opTimeout)
		}
	}
}

// TestWrongCredentials mounts MinIO with a wrong secret: EACCES.
func TestWrongCredentials(t *testing.T) {
	srv := testserver.MinIO(t)
	cfg := minioConfig(srv, newMinIOBucket(t, srv))
	bad, err := s3store.New(t.Context(), cfg, objstore.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: "wrong-secret-key"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bad.Close() }()
	m := mountStore(t, bad, mountSpec{cache: fakeLocal})
	for name, call := range map[string]func() error{
		"stat":    func() error { _, err := os.Stat(path(m, "f")); return err },
		"readdir": func() error { _, err := os.ReadDir(m.dir); return err },
	} {
		if _, err := within(t, name, func() (struct{}, error) { return struct{}{}, call() }); errnoOf(err) != syscall.EACCES {
			t.Errorf("%s with wrong credentials: %v, want EACCES", name, err)
		}
	}
}

// TestBucketGoesAwayMidRead stops the server while a large file is open and
// partly read: the next uncached read fails with EIO within the op timeout.
func TestBucketGoesAwayMidRead(t *testing.T) {
	const opTimeout = 3 * time.Second
	for _, kind := range []cacheKind{realCache, fakeNoLocal} {
		t.Run(string(kind), func(t *testing.T) {
			srv := testserver.NewMinIO(t)
			store := newMinIOStore(t, srv)
			data := randomBytes(64<<20, 9)
			put(t, store, "big", data)
			m := mountStore(t, store, mountSpec{cache: kind, cfg: Config{Spec: mountspec.Spec{OpTimeout: opTimeout}}})
			f := must(t, "open", func() (*os.File, error) { return os.Open(path(m, "big")) })
			defer func() { _ = f.Close() }()
			buf := make([]byte, 1<<20)
			must(t, "first read", func() (int, error) { return f.ReadAt(buf, 0) })
			if !bytes.Equal(buf, data[:len(buf)]) {
				t.Fatal("first read differs")
			}
			srv.Stop()
			start := time.Now()
			_, err := within(t, "read after stop", func() (int, error) { return f.ReadAt(buf, 48<<20) })
			if errnoOf(err) != syscall.EIO {
				t.Errorf("read after the server stopped: %v, want EIO", err)
			}
			if d := time.Since(start); d > opTimeout+5*time.Second {
				t.Errorf("failed read took %v, op timeout %v", d, opTimeout)
			}
			t.Logf("EIO after %v", time.Since(start))
		})
	}
}

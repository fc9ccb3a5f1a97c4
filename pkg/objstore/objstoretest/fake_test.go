package objstoretest_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

func TestFakeConformance(t *testing.T) {
	objstoretest.RunConformance(t, objstoretest.Harness{
		NewStore: func(t *testing.T) objstore.Store {
			f := objstoretest.NewFake()
			t.Cleanup(func() { _ = f.Close() })
			return f
		},
		NewDeniedStore: func(t *testing.T) objstore.Store {
			f := objstoretest.NewFake()
			for _, op := range []objstoretest.Op{objstoretest.OpStat, objstoretest.OpRead, objstoretest.OpList, objstoretest.OpPut} {
				f.SetError(op, objstore.ErrAccessDenied)
			}
			return f
		},
	})
}

func TestFakeCounters(t *testing.T) {
	ctx := t.Context()
	f := objstoretest.NewFake()
	if _, err := f.Put(ctx, "k", strings.NewReader("hello world"), objstore.PutOptions{Size: -1}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		rc, _, err := f.Read(ctx, "k", objstore.ReadOptions{Offset: 6, Length: -1})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, rc)
		_ = rc.Close()
	}
	_, _ = f.Stat(ctx, "nope")
	if got := f.Calls(objstoretest.OpRead); got != 3 {
		t.Errorf("Calls(Read) = %d, want 3", got)
	}
	if got := f.Calls(objstoretest.OpStat); got != 1 {
		t.Errorf("Calls(Stat) = %d, want 1 (failed calls count)", got)
	}
	if got := f.BytesRead(); got != 15 {
		t.Errorf("BytesRead = %d, want 15", got)
	}
	f.ResetCounters()
	if f.Calls(objstoretest.OpRead) != 0 || f.BytesRead() != 0 || f.Calls(objstoretest.OpPut) != 0 {
		t.Error("ResetCounters left counts")
	}
}

func TestFakeInjection(t *testing.T) {
	ctx := t.Context()
	f := objstoretest.NewFake()
	if _, err := f.Put(ctx, "k", strings.NewReader("x"), objstore.PutOptions{Size: 1}); err != nil {
		t.Fatal(err)
	}
	f.SetError(objstoretest.OpRead, objstore.ErrUnavailable)
	if _, _, err := f.Read(ctx, "k", objstore.ReadOptions{Length: -1}); !errors.Is(err, objstore.ErrUnavailable) {
		t.Errorf("Read with injected error: %v", err)
	}
	if _, err := f.Stat(ctx, "k"); err != nil {
		t.Errorf("Stat is not affected by Read's error: %v", err)
	}
	f.SetError(objstoretest.OpRead, nil)
	if _, _, err := f.Read(ctx, "k", objstore.ReadOptions{Length: -1}); err != nil {
		t.Errorf("Read after clearing the error: %v", err)
	}

	f.SetLatency(time.Hour)
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := f.Stat(short, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Stat under latency with a short deadline: %v", err)
	}
	f.SetLatency(0)

	// A hook holding Reads back until released: all readers pile up.
	release := make(chan struct{})
	var mu sync.Mutex
	waiting := 0
	f.SetHook(func(ctx context.Context, op objstoretest.Op, key string) error {
		if op != objstoretest.OpRead {
			return nil
		}
		mu.Lock()
		waiting++
		mu.Unlock()
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			rc, _, err := f.Read(ctx, "k", objstore.ReadOptions{Length: -1})
			if err != nil {
				t.Error(err)
				return
			}
			_ = rc.Close()
		})
	}
	for {
		mu.Lock()
		n := waiting
		mu.Unlock()
		if n == 4 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()

	f.SetHook(func(context.Context, objstoretest.Op, string) error { return objstore.ErrThrottled })
	if _, err := f.List(ctx, objstore.ListOptions{}); !objstore.IsRetryable(err) {
		t.Errorf("List with a throttling hook: %v", err)
	}
	f.SetHook(nil)

	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Stat(ctx, "k"); !errors.Is(err, objstore.ErrUnavailable) {
		t.Errorf("Stat after Close: %v", err)
	}
}

func TestFakeAdmin(t *testing.T) {
	ctx := t.Context()
	a := objstoretest.NewFakeAdmin()
	a.SetForeign("taken")
	cases := []struct {
		name string
		run  func() error
		want error
	}{
		{"create", func() error { return a.CreateBucket(ctx, "b") }, nil},
		{"create again", func() error { return a.CreateBucket(ctx, "b") }, nil},
		{"create foreign", func() error { return a.CreateBucket(ctx, "taken") }, objstore.ErrBucketExists},
		{"put into b", func() error {
			f, ok := a.Bucket("b")
			if !ok {
				return errors.New("no bucket b")
			}
			_, err := f.Put(ctx, "k", strings.NewReader(""), objstore.PutOptions{Size: 0})
			return err
		}, nil},
		{"delete non-empty", func() error { return a.DeleteBucket(ctx, "b") }, objstore.ErrBucketNotEmpty},
		{"empty b", func() error {
			f, _ := a.Bucket("b")
			_, err := f.DeletePrefix(ctx, "")
			return err
		}, nil},
		{"delete", func() error { return a.DeleteBucket(ctx, "b") }, nil},
		{"delete missing", func() error { return a.DeleteBucket(ctx, "b") }, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.run(); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
		})
	}
	if ok, err := a.BucketExists(ctx, "b"); ok || err != nil {
		t.Errorf("BucketExists(b) after delete = %v, %v", ok, err)
	}
	if ok, err := a.BucketExists(ctx, "taken"); !ok || err != nil {
		t.Errorf("BucketExists(taken) = %v, %v", ok, err)
	}
	a.SetError(objstoretest.OpBucketExists, objstore.ErrAccessDenied)
	if _, err := a.BucketExists(ctx, "x"); !errors.Is(err, objstore.ErrAccessDenied) {
		t.Errorf("BucketExists with injected error: %v", err)
	}
	if got := a.Calls(objstoretest.OpCreateBucket); got != 3 {
		t.Errorf("Calls(CreateBucket) = %d, want 3", got)
	}
}

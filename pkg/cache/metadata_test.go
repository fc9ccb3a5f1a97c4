package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// steppedClock is a clock tests move by hand.
type steppedClock struct{ t time.Time }

func (c *steppedClock) Now() time.Time { return c.t }

func TestStatTTL(t *testing.T) {
	tests := []struct {
		name      string
		ttl       time.Duration
		advance   time.Duration
		wantHEADs int64 // for the second Stat
	}{
		{"fresh", time.Minute, 30 * time.Second, 0},
		{"expired", time.Minute, 61 * time.Second, 1},
		{"zero revalidates", 0, 0, 1},
		{"negative is forever", -1, 1000 * time.Hour, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &steppedClock{t: time.Unix(1e9, 0)}
			opts := testOpts()
			opts.MetadataTTL, opts.Now = tt.ttl, clock.Now
			c, fake, _ := newFixture(t, opts)
			info := put(t, fake, "a/b", []byte("hello"))
			got, err := c.Stat(context.Background(), "a/b")
			if err != nil || got.Version != info.Version || got.Size != 5 {
				t.Fatalf("Stat = %+v, %v", got, err)
			}
			mustFlush(t, c) // the second Stat reads the index, not the overlay
			clock.t = clock.t.Add(tt.advance)
			fake.ResetCounters()
			got, err = c.Stat(context.Background(), "a/b")
			if err != nil || got.Version != info.Version || got.Size != 5 || got.Key != "a/b" {
				t.Fatalf("second Stat = %+v, %v", got, err)
			}
			if n := fake.Calls(objstoretest.OpStat); n != tt.wantHEADs {
				t.Errorf("%d HEADs, want %d", n, tt.wantHEADs)
			}
		})
	}
}

func TestNegativeTTL(t *testing.T) {
	tests := []struct {
		name      string
		ttl       time.Duration
		advance   time.Duration
		wantHEADs int64
	}{
		{"fresh", time.Minute, time.Second, 0},
		{"expired", time.Minute, 2 * time.Minute, 1},
		{"zero", 0, 0, 1},
		{"forever", -1, 1000 * time.Hour, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &steppedClock{t: time.Unix(1e9, 0)}
			opts := testOpts()
			opts.NegativeMetadataTTL, opts.Now = tt.ttl, clock.Now
			c, fake, _ := newFixture(t, opts)
			if _, err := c.Stat(context.Background(), "missing"); !errors.Is(err, objstore.ErrNotFound) {
				t.Fatalf("Stat: %v, want ErrNotFound", err)
			}
			clock.t = clock.t.Add(tt.advance)
			fake.ResetCounters()
			if _, err := c.Stat(context.Background(), "missing"); !errors.Is(err, objstore.ErrNotFound) {
				t.Fatalf("second Stat: %v, want ErrNotFound", err)
			}
			if n := fake.Calls(objstoretest.OpStat); n != tt.wantHEADs {
				t.Errorf("%d HEADs, want %d", n, tt.wantHEADs)
			}
		})
	}
}

func TestInvalidate(t *testing.T) {
	c, fake, _ := newFixture(t, testOpts())
	if _, err := c.Stat(context.Background(), "d/new"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatal(err)
	}
	if _, err := c.List(context.Background(), "d/"); err != nil {
		t.Fatal(err)
	}
	mustFlush(t, c)
	info := put(t, fake, "d/new", []byte("x"))
	c.Invalidate("d/new")
	got, err := c.Stat(context.Background(), "d/new")
	if err != nil || got.Version != info.Version {
		t.Fatalf("Stat after Invalidate = %+v, %v", got, err)
	}
	l, err := c.List(context.Background(), "d/")
	if err != nil || len(l.Objects) != 1 || l.Objects[0].Key != "d/new" {
		t.Fatalf("List after Invalidate = %+v, %v", l, err)
	}
}

func TestListAllPagesAndAttrs(t *testing.T) {
	c, fake, _ := newFixture(t, testOpts())
	var want []string
	for i := 0; i < 2500; i++ { // the fake pages at 1000 keys
		k := fmt.Sprintf("big/f%05d", i)
		want = append(want, k)
		put(t, fake, k, []byte{byte(i)})
	}
	put(t, fake, "big/", nil) // directory marker: not listed as a child
	put(t, fake, "big/sub/x", []byte("x"))
	put(t, fake, "big/sub2/y", []byte("y"))
	put(t, fake, "other", []byte("o"))
	fake.ResetCounters()
	l, err := c.List(context.Background(), "big/")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range l.Objects {
		keys = append(keys, o.Key)
	}
	if !slices.Equal(keys, want) {
		t.Fatalf("listed %d objects, want %d", len(keys), len(want))
	}
	if !slices.Equal(l.Prefixes, []string{"big/sub/", "big/sub2/"}) {
		t.Errorf("prefixes %v", l.Prefixes)
	}
	if n := fake.Calls(objstoretest.OpList); n < 3 {
		t.Errorf("%d LIST pages for 2500 keys", n)
	}
	fake.ResetCounters()
	if _, err := c.Stat(context.Background(), "big/f01234"); err != nil {
		t.Fatal(err)
	}
	mustFlush(t, c)
	l2, err := c.List(context.Background(), "big/")
	if err != nil || len(l2.Objects) != len(l.Objects) || !l2.FetchedAt.Equal(l.FetchedAt) {
		t.Fatalf("cached listing differs: %d objects, %v", len(l2.Objects), err)
	}
	if n := fake.Calls(objstoretest.OpStat) + fake.Calls(objstoretest.OpList); n != 0 {
		t.Errorf("%d requests for listed attributes and a cached listing", n)
	}
	root, err := c.List(context.Background(), "")
	if err != nil || len(root.Objects) != 1 || !slices.Equal(root.Prefixes, []string{"big/"}) {
		t.Fatalf("root listing = %+v, %v", root, err)
	}
	if _, err := c.List(context.Background(), "nodelimiter"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("List without trailing slash: %v", err)
	}
}

func TestInodes(t *testing.T) {
	c, _, _ := newFixture(t, testOpts())
	root, err := c.InodeOf("")
	if err != nil || root != 1 {
		t.Fatalf("root inode = %d, %v", root, err)
	}
	a, _ := c.InodeOf("a")
	b, _ := c.InodeOf("a/b")
	if a == b || a <= 1 || b <= 1 {
		t.Fatalf("inodes a=%d b=%d", a, b)
	}
	if again, _ := c.InodeOf("a"); again != a {
		t.Errorf("InodeOf(a) changed: %d → %d", a, again)
	}
	if p, ok := c.PathOf(b); !ok || p != "a/b" {
		t.Errorf("PathOf(%d) = %q, %v", b, p, ok)
	}
	if _, ok := c.PathOf(999999); ok {
		t.Error("PathOf of an unknown inode")
	}
	for _, bad := range []string{"/a", "a/", "a\x00b"} {
		if _, err := c.InodeOf(bad); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("InodeOf(%q): %v, want ErrInvalidArgument", bad, err)
		}
	}
	// Concurrent allocation of the same paths yields one number each.
	paths := make([]string, 200)
	for i := range paths {
		paths[i] = fmt.Sprintf("c/%d", i%50)
	}
	results := make([][]uint64, 4)
	done := make(chan struct{})
	for g := range results {
		go func(g int) {
			defer func() { done <- struct{}{} }()
			r := make([]uint64, len(paths))
			for i, p := range paths {
				r[i], _ = c.InodeOf(p)
			}
			results[g] = r
		}(g)
	}
	for range results {
		<-done
	}
	for g := 1; g < len(results); g++ {
		if !slices.Equal(results[g], results[0]) {
			t.Fatal("concurrent InodeOf calls disagree")
		}
	}
}

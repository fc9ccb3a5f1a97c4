package cache

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// TestRenameInodes: renamed paths keep their numbers under the new names
// (also below a renamed directory), the old names get new numbers, a
// replaced target's number resolves to nothing, neighbours sharing a
// name prefix are untouched, and a repeated move changes nothing.
func TestRenameInodes(t *testing.T) {
	c, _, _ := newFixture(t, testOpts())
	ino := inodeOf(t, c)
	a, ax, neighbour, target := ino("a"), ino("a/x"), ino("a-b"), ino("b")
	if err := c.RenameInodes("a", "b"); err != nil {
		t.Fatal(err)
	}
	// Repeated (a rename the kernel resent to a successor): nothing
	// numbered under a any more, so nothing changes.
	if err := c.RenameInodes("a", "b"); err != nil {
		t.Fatal(err)
	}
	if got := ino("b"); got != a {
		t.Errorf("b = %d, want a's %d", got, a)
	}
	if got := ino("b/x"); got != ax {
		t.Errorf("b/x = %d, want a/x's %d", got, ax)
	}
	if p, ok := c.PathOf(a); !ok || p != "b" {
		t.Errorf("PathOf(%d) = %q, %v; want b", a, p, ok)
	}
	if p, ok := c.PathOf(ax); !ok || p != "b/x" {
		t.Errorf("PathOf(%d) = %q, %v; want b/x", ax, p, ok)
	}
	if p, ok := c.PathOf(target); ok {
		t.Errorf("the replaced target's number still resolves to %q", p)
	}
	if got := ino("a-b"); got != neighbour {
		t.Errorf("a-b changed: %d, was %d", got, neighbour)
	}
	for _, n := range []uint64{a, ax, neighbour, target} {
		if got := ino("a"); got == n {
			t.Errorf("a was created again with the old number %d", got)
		}
	}
}

// TestRenameInodesBesideCommits: commits running beside renames (the
// flusher commits pending numbers every interval) never write a moved
// path's old name back: every renamed number resolves to its new path,
// the old name gets a new number, and the table stays a bijection.
func TestRenameInodesBesideCommits(t *testing.T) {
	c, _, _ := newFixture(t, testOpts())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := c.commitInodes(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	halt := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(halt) // before the fixture's cleanup, also after a Fatal
	ino := inodeOf(t, c)
	for i := range 100 {
		src, dst := fmt.Sprintf("s%d", i), fmt.Sprintf("d%d", i)
		a, ax := ino(src), ino(src+"/x")
		if err := c.RenameInodes(src, dst); err != nil {
			t.Fatal(err)
		}
		if p, ok := c.PathOf(a); !ok || p != dst {
			t.Fatalf("PathOf(%d) = %q, %v after renaming %s to %s", a, p, ok, src, dst)
		}
		if p, ok := c.PathOf(ax); !ok || p != dst+"/x" {
			t.Fatalf("PathOf(%d) = %q, %v after renaming %s to %s", ax, p, ok, src, dst)
		}
	}
	halt()
	for i := range 100 {
		src := fmt.Sprintf("s%d", i)
		if got, p := ino(src), fmt.Sprintf("d%d", i); got == ino(p) {
			t.Fatalf("%s has the number of %s, %d", src, p, got)
		}
	}
	if rep, err := c.Verify(context.Background()); err != nil {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
}

// inodeOf is c.InodeOf failing the test on an error.
func inodeOf(t *testing.T, c *Cache) func(path string) uint64 {
	return func(p string) uint64 {
		t.Helper()
		n, err := c.InodeOf(p)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
}

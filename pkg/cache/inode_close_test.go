package cache

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// TestCloseBesideInodeWork: Close gives back the unused inode reservation
// in its last index transaction while numbers are still being handed out
// and paths renamed (a FUSE request racing the unmount). Those take the
// inode lock before the index; Close must too, or each waits for the
// other for ever.
func TestCloseBesideInodeWork(t *testing.T) {
	for round := range 60 {
		// Not newFixture: its cleanup would wait on a deadlocked index.
		c := openTest(t, t.TempDir(), objstoretest.NewFake(), testOpts())
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					p := fmt.Sprintf("w%d/%d", w, i)
					if _, err := c.InodeOf(p); err != nil {
						return // closed
					}
					if err := c.RenameInodes(p, p+"-moved"); err != nil {
						return
					}
				}
			})
		}
		time.Sleep(time.Duration(round%5) * time.Millisecond)
		closed := make(chan error, 1)
		go func() { closed <- c.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("round %d: Close: %v", round, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: Close beside InodeOf and RenameInodes did not return within 20 s (lock order)", round)
		}
		close(stop)
		wg.Wait()
		if _, err := c.InodeOf("after"); err == nil {
			t.Fatalf("round %d: InodeOf after Close succeeded", round)
		}
	}
}

package objstoretest

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
)

// testIfAbsent: a conditional create stores a new key, fails with
// ErrExists (storing nothing) on an existing one, and of several creates
// of one key racing, exactly one wins; large bodies (multipart, resumable)
// are conditional too.
func testIfAbsent(t *testing.T, h Harness) {
	s := h.NewStore(t)
	ctx := t.Context()
	create := func(key string, data []byte) (objstore.ObjectInfo, error) {
		return s.Put(ctx, key, bytes.NewReader(data), objstore.PutOptions{Size: int64(len(data)), IfAbsent: true})
	}

	first, err := create("claim", []byte("first"))
	if err != nil {
		t.Fatalf("create of a new key: %v", err)
	}
	if _, err := create("claim", []byte("second")); !errors.Is(err, objstore.ErrExists) {
		t.Fatalf("create of an existing key = %v, want ErrExists", err)
	}
	if errors.Is(err, objstore.ErrPreconditionFailed) {
		t.Errorf("a lost create also matches ErrPreconditionFailed: %v", err)
	}
	if got, info := mustRead(t, s, "claim", objstore.ReadOptions{Length: -1}); string(got) != "first" || info.Version != first.Version {
		t.Errorf("after a lost create: %q version %s, want %q version %s", got, info.Version, "first", first.Version)
	}
	// An empty claim, then the owner's unconditional upload replaces it.
	if _, err := create("empty", nil); err != nil {
		t.Fatalf("create of an empty object: %v", err)
	}
	mustPut(t, s, "empty", []byte("content"))
	if got, _ := mustRead(t, s, "empty", objstore.ReadOptions{Length: -1}); string(got) != "content" {
		t.Errorf("overwrite of a claim: %q", got)
	}
	// A deleted key can be created again.
	if err := s.Delete(ctx, "claim"); err != nil {
		t.Fatal(err)
	}
	if _, err := create("claim", []byte("again")); err != nil {
		t.Errorf("create after delete: %v", err)
	}

	t.Run("race", func(t *testing.T) {
		const racers = 8
		for round := range 5 {
			key := "race-" + string(rune('a'+round))
			var wg sync.WaitGroup
			errs := make([]error, racers)
			for i := range racers {
				wg.Go(func() { _, errs[i] = create(key, []byte{byte(i)}) })
			}
			wg.Wait()
			won := -1
			for i, err := range errs {
				switch {
				case err == nil && won >= 0:
					t.Fatalf("round %d: racers %d and %d both created %q", round, won, i, key)
				case err == nil:
					won = i
				case !errors.Is(err, objstore.ErrExists):
					t.Fatalf("round %d: racer %d: %v, want nil or ErrExists", round, i, err)
				}
			}
			if won < 0 {
				t.Fatalf("round %d: no racer created %q", round, key)
			}
			if got, _ := mustRead(t, s, key, objstore.ReadOptions{Length: -1}); !bytes.Equal(got, []byte{byte(won)}) {
				t.Errorf("round %d: %q holds %v, the winner wrote %d", round, key, got, won)
			}
		}
	})

	t.Run("large", func(t *testing.T) {
		data := patternBytes(11, 12<<20+1) // multipart / resumable
		if _, err := create("big", data); err != nil {
			t.Fatalf("large create: %v", err)
		}
		if _, err := create("big", data); !errors.Is(err, objstore.ErrExists) {
			t.Fatalf("large create of an existing key = %v, want ErrExists", err)
		}
		if st := mustStat(t, s, "big"); st.Size != int64(len(data)) {
			t.Errorf("size after a lost create = %d, want %d", st.Size, len(data))
		}
	})
}

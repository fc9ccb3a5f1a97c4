package tier

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// tierKey is the key of the tier object of block i of a made-up object.
func tierKey(i int) string {
	return Identity{Origin: "s3://o/", Key: fmt.Sprint("f", i), Version: "v", Size: 1, BlockSize: 1, Blocks: 1}.ObjectKey()
}

// aged is one listed object: its name in the test, its age and size.
type aged struct {
	name string
	age  time.Duration
	size int64
}

// TestSelectVictims: the oldest objects go while they are older than the
// maximum age or the bytes exceed the budget; at most max of them.
func TestSelectVictims(t *testing.T) {
	objs := []aged{{"d", 4 * time.Hour, 10}, {"a", 10 * time.Hour, 10}, {"e", time.Hour, 10},
		{"b", 8 * time.Hour, 10}, {"c", 6 * time.Hour, 10}}
	for _, tc := range []struct {
		name   string
		limits Limits
		max    int
		want   string // victims, oldest first; "!" marks those expired
	}{
		{"no limits", Limits{}, 10, ""},
		{"all within", Limits{MaxBytes: 50, MaxAge: 11 * time.Hour}, 10, ""},
		{"budget", Limits{MaxBytes: 25}, 10, "a b c"},
		{"budget exactly met", Limits{MaxBytes: 30}, 10, "a b"},
		{"age", Limits{MaxAge: 5 * time.Hour}, 10, "a! b! c!"},
		{"age then budget", Limits{MaxBytes: 15, MaxAge: 7 * time.Hour}, 10, "a! b! c d"},
		{"budget beyond age", Limits{MaxBytes: 45, MaxAge: 9 * time.Hour}, 10, "a!"},
		{"at most max", Limits{MaxBytes: 1}, 2, "a b"},
		{"max zero", Limits{MaxBytes: 1}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
			s := newSelector(tc.limits, tc.max, now)
			for _, o := range objs {
				s.add(objstore.ObjectInfo{Key: o.name, Size: o.size, ModTime: now.Add(-o.age)})
			}
			var got []string
			for _, v := range s.victims() {
				got = append(got, v.Key+map[bool]string{true: "!"}[v.expired])
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("victims %q, want %q", got, tc.want)
			}
			if s.objects != 5 || s.bytes != 50 {
				t.Errorf("counted %d objects, %d bytes; want 5, 50", s.objects, s.bytes)
			}
		})
	}
}

// TestEvictFake: a pass over a fake tier deletes exactly the selected
// objects, leaves the younger ones and any key that is not a tier
// object's, and reports the tier after it.
func TestEvictFake(t *testing.T) {
	f := objstoretest.NewFake()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var keys []string
	for i := range 6 { // tierKey(0) the oldest: 6 h; tierKey(5) 1 h
		k := tierKey(i)
		keys = append(keys, k)
		if _, err := f.Put(t.Context(), k, bytes.NewReader(make([]byte, 100)), objstore.PutOptions{Size: 100}); err != nil {
			t.Fatal(err)
		}
		if err := f.SetModTime(k, now.Add(-time.Duration(6-i)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{KeyRoot + "notes.txt", "data/outside"} {
		if _, err := f.Put(t.Context(), k, strings.NewReader("x"), objstore.PutOptions{Size: 1}); err != nil {
			t.Fatal(err)
		}
		if err := f.SetModTime(k, now.Add(-100*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Evict(t.Context(), f, EvictOptions{Limits: Limits{MaxBytes: 250, MaxAge: 5*time.Hour + 30*time.Minute},
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	want := EvictResult{Listed: true, Objects: 2, Bytes: 200, Expired: 1, OverBudget: 3, EvictedBytes: 400, Foreign: 1}
	if res != want {
		t.Errorf("Evict = %+v, want %+v", res, want)
	}
	left := f.Keys()
	for i, k := range keys {
		if gone := !slices.Contains(left, k); gone != (i < 4) {
			t.Errorf("object %d (age %d h): gone %v, want %v", i, 6-i, gone, i < 4)
		}
	}
	for _, k := range []string{KeyRoot + "notes.txt", "data/outside"} {
		if !slices.Contains(left, k) {
			t.Errorf("%s deleted; only tier objects may be", k)
		}
	}
}

// TestIsObjectKey: only keys of the form ObjectKey makes are tier objects.
func TestIsObjectKey(t *testing.T) {
	k := tierKey(1)
	for key, want := range map[string]bool{
		k: true, strings.ToUpper(k): false, k + "x": false, k[:len(k)-1]: false,
		KeyRoot + "zz/" + k[len(KeyRoot)+3:]: false, "other/" + k[len(KeyRoot):]: false,
	} {
		if got := isObjectKey(key); got != want {
			t.Errorf("isObjectKey(%q) = %v, want %v", key, got, want)
		}
	}
}

// TestLimitsTighter: each bound is the smaller one that is set.
func TestLimitsTighter(t *testing.T) {
	a := Limits{MaxBytes: 100}
	b := Limits{MaxBytes: 200, MaxAge: time.Hour}
	if got := a.Tighter(b); got != (Limits{MaxBytes: 100, MaxAge: time.Hour}) {
		t.Errorf("Tighter = %+v", got)
	}
	if got := (Limits{}).Tighter(Limits{}); !got.IsZero() {
		t.Errorf("Tighter of none = %+v", got)
	}
}

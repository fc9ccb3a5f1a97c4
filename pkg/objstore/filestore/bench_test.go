package filestore_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
)

func BenchmarkRead1MiB(b *testing.B) {
	s, _ := benchStore(b)
	data := bytes.Repeat([]byte("x"), 1<<20)
	if _, err := s.Put(b.Context(), "obj", bytes.NewReader(data), objstore.PutOptions{Size: int64(len(data))}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		rc, _, err := s.Read(b.Context(), "obj", objstore.ReadOptions{Length: -1})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, rc); err != nil {
			b.Fatal(err)
		}
		_ = rc.Close()
	}
}

// BenchmarkListFlatDir lists 10,000 objects of one directory in pages of
// 1000; every page reads and sorts the whole directory, then stats the
// objects it returns.
func BenchmarkListFlatDir(b *testing.B) {
	s, _ := benchStore(b)
	const n = 10000
	for i := range n {
		if _, err := s.Put(b.Context(), fmt.Sprintf("flat/k%06d", i), bytes.NewReader(nil), objstore.PutOptions{Size: 0}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		count := 0
		err := objstore.ListAll(b.Context(), s, objstore.ListOptions{Prefix: "flat/"}, func(p objstore.ListPage) error {
			count += len(p.Objects)
			return nil
		})
		if err != nil || count != n {
			b.Fatalf("listed %d, %v", count, err)
		}
	}
	b.ReportMetric(float64(n), "objects/op")
}

func benchStore(b *testing.B) (objstore.Store, string) {
	dir := b.TempDir()
	s, err := filestoreNew(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s, dir
}

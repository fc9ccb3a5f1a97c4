package s3store

import (
	"bytes"
	"io"
	"sync"
	"testing"

	"github.com/basin-csi/basin/pkg/objstore"
)

// BenchmarkRangedRead reads a 64 MiB object from MinIO in 8 MiB ranges
// (the part size the cache fetches with), one range after another and with
// 8 readers at once. Throughput is per whole object read.
//
//	go test -run '^$' -bench RangedRead -benchtime 20x ./pkg/objstore/s3store/
func BenchmarkRangedRead(b *testing.B) {
	const (
		objectSize = 64 << 20
		rangeSize  = 8 << 20
		ranges     = objectSize / rangeSize
	)
	s := newMinIOStore(b, objstore.BackendS3, asConfigured, nil)
	data := pattern(objectSize)
	put, err := s.Put(b.Context(), "bench/64MiB", bytes.NewReader(data), objstore.PutOptions{Size: objectSize})
	if err != nil {
		b.Fatal(err)
	}
	readRange := func(buf []byte, i int) error {
		rc, _, err := s.Read(b.Context(), "bench/64MiB", objstore.ReadOptions{
			Offset: int64(i) * rangeSize, Length: rangeSize, IfVersion: put.Version,
		})
		if err != nil {
			return err
		}
		defer func() { _ = rc.Close() }()
		_, err = io.ReadFull(rc, buf)
		return err
	}

	b.Run("sequential", func(b *testing.B) {
		buf := make([]byte, rangeSize)
		b.SetBytes(objectSize)
		for b.Loop() {
			for i := range ranges {
				if err := readRange(buf, i); err != nil {
					b.Fatal(err)
				}
			}
		}
		if !bytes.Equal(buf, data[objectSize-rangeSize:]) {
			b.Fatal("the last range differs")
		}
	})
	b.Run("parallel-8", func(b *testing.B) {
		bufs := make([][]byte, ranges)
		for i := range bufs {
			bufs[i] = make([]byte, rangeSize)
		}
		b.SetBytes(objectSize)
		for b.Loop() {
			var wg sync.WaitGroup
			errs := make([]error, ranges)
			for i := range ranges {
				wg.Go(func() { errs[i] = readRange(bufs[i], i) })
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		// The last round's bytes must be the object's.
		for i := range ranges {
			if !bytes.Equal(bufs[i], data[i*rangeSize:(i+1)*rangeSize]) {
				b.Fatalf("range %d differs", i)
			}
		}
	})
}

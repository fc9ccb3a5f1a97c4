package objstoretest

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/basin-csi/basin/pkg/objstore"
)

// RangedDownload reads the whole object with parallel ranged GETs of part
// bytes, each into its worker's buffer: what a plain downloader does, the
// baseline the cold-read benchmarks compare the cache with. With a non-nil
// to, each part is then written at its offset, as a download to a local
// file does.
func RangedDownload(ctx context.Context, store objstore.Store, info objstore.ObjectInfo, part int64, parallel int, to io.WriterAt) error {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		errs = make([]error, parallel)
	)
	for w := range parallel {
		wg.Go(func() {
			buf := make([]byte, part)
			for {
				off := next.Add(part) - part
				if off >= info.Size {
					return
				}
				n := min(part, info.Size-off)
				rc, _, err := store.Read(ctx, info.Key, objstore.ReadOptions{Offset: off, Length: n, IfVersion: info.Version})
				if err == nil {
					_, err = io.ReadFull(rc, buf[:n])
					_ = rc.Close()
				}
				if err == nil && to != nil {
					_, err = to.WriteAt(buf[:n], off)
				}
				if err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

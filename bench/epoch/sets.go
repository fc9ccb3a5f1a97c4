package epoch

import (
	"flag"

	"github.com/basin-csi/basin/bench/dataset"
)

// SetSizes are the data-set flags of a node-level scenario.
type SetSizes struct {
	smallFiles, ckptFiles *int
	ckptSize              *int64
}

// SetFlags registers -small-files, -ckpt-files and -ckpt-size on fs.
func SetFlags(fs *flag.FlagSet) SetSizes {
	return SetSizes{
		smallFiles: fs.Int("small-files", 0, "override: small files (default 4000, quick 1000)"),
		ckptFiles:  fs.Int("ckpt-files", 0, "override: checkpoint shards (default 2)"),
		ckptSize:   fs.Int64("ckpt-size", 0, "override: checkpoint shard size, bytes (default 512 MiB, quick 128 MiB)"),
	}
}

// Sets returns the two data sets once fs is parsed, named prefix-small and
// prefix-ckpt: small files of 128 KiB over 20 directories (4000, quick
// 1000), read in random order by several threads, and a checkpoint of 2
// shards of 512 MiB (quick 128 MiB), read sequentially.
func (f SetSizes) Sets(prefix string, quick bool) (small, ckpt dataset.Set, err error) {
	files, shard := 4000, int64(512<<20)
	if quick {
		files, shard = 1000, 128<<20
	}
	small = dataset.Small(pick(*f.smallFiles, files), 128<<10, 20)
	small.Name = prefix + "-small"
	ckpt = dataset.Checkpoint(pick(*f.ckptFiles, 2), pick(*f.ckptSize, shard))
	ckpt.Name = prefix + "-ckpt"
	if err := small.Validate(); err != nil {
		return small, ckpt, err
	}
	return small, ckpt, ckpt.Validate()
}

func pick[T int | int64](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// Threads is the readers of an epoch over set: threads for files in
// directories, one for a checkpoint (read shard after shard).
func Threads(set dataset.Set, threads int) int {
	if set.Layout == dataset.LayoutFlat {
		return 1
	}
	return threads
}

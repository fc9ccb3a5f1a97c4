package warmup

import (
	"errors"
	"fmt"
	"time"
)

// Defaults of Options' zero values.
const (
	DefaultThreads          = 8
	DefaultBufferSize       = 1 << 20 // the FUSE mount's max_read
	DefaultProgressInterval = time.Second
	// maxFailures bounds the failures a Result lists; Progress.Errors
	// counts all.
	maxFailures = 100
	// maxListers bounds the goroutines listing directories.
	maxListers = 8
)

// Options configure Run.
type Options struct {
	// Threads is the number of files read (or stat'ed) at once, and of
	// directories listed at once up to 8. Default DefaultThreads.
	Threads int
	// MetadataOnly stats files instead of reading them: the mount's
	// listings and attributes get cached, no data.
	MetadataOnly bool
	// StateFile records progress for a later run to skip; "" disables
	// resuming. See the package documentation.
	StateFile string
	// Restart ignores (and replaces) what StateFile holds.
	Restart bool
	// BufferSize is each reader's buffer. Default DefaultBufferSize.
	BufferSize int
	// Progress, if set, receives a snapshot every ProgressInterval and a
	// last one (Done) when Run ends. It runs on Run's goroutine and
	// should return quickly.
	Progress func(Progress)
	// ProgressInterval defaults to DefaultProgressInterval.
	ProgressInterval time.Duration
}

// ErrInvalidOptions: Options or paths Run cannot work with.
var ErrInvalidOptions = errors.New("warmup: invalid options")

func (o Options) withDefaults() (Options, error) {
	if o.Threads < 0 || o.BufferSize < 0 || o.ProgressInterval < 0 {
		return o, fmt.Errorf("%w: negative value", ErrInvalidOptions)
	}
	if o.Threads == 0 {
		o.Threads = DefaultThreads
	}
	if o.BufferSize == 0 {
		o.BufferSize = DefaultBufferSize
	}
	if o.ProgressInterval == 0 {
		o.ProgressInterval = DefaultProgressInterval
	}
	return o, nil
}

// mode names what a run does, in the state file.
func (o Options) mode() string {
	if o.MetadataOnly {
		return "metadata"
	}
	return "data"
}

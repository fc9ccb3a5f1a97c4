package main

import (
	"os"
	"runtime/debug"
)

// mountGCPercent is the FUSE process's GOGC unless the environment sets
// one. Its Go heap is mostly go-fuse's request buffers in flight (a 1 MiB
// buffer per READ), and the default 100 lets the heap grow to twice that
// between collections; 50 keeps the process's peak RSS within the 256 MiB
// budget with 16 random readers and did not slow the warm path
// (docs/architecture.md "Peak RSS of the FUSE process").
const mountGCPercent = 50

// tuneMountGC sets the FUSE process's garbage collector.
func tuneMountGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(mountGCPercent)
	}
}

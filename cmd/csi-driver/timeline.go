package main

import (
	"fmt"
	"strings"
	"time"
)

// processStart is when this process's package initialisation reached
// package main: everything before (exec, the runtime, every imported
// package's init) happened between the node plugin's fork and this.
var processStart = time.Now()

// timeline records how long a mount process took to reach each step of
// its start (a heal's pause is mostly this), for one log line.
type timeline struct {
	start time.Time
	marks []string
}

func newTimeline() *timeline { return &timeline{start: processStart} }

// mark records that step was reached now.
func (t *timeline) mark(step string) {
	t.marks = append(t.marks, fmt.Sprintf("%s=+%dms", step, time.Since(t.start).Milliseconds()))
}

// String is the steps in order, then the process's start as wall-clock
// time (to line up with the node plugin's log).
func (t *timeline) String() string {
	return strings.Join(t.marks, " ") + " (main at " + t.start.Format("15:04:05.000") + ")"
}

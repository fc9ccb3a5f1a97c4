package main

import (
	"regexp"
	"testing"
	"time"
)

// TestTimeline: the steps in order, each as milliseconds since the
// process started, then the start as wall-clock time.
func TestTimeline(t *testing.T) {
	tl := &timeline{start: time.Now().Add(-1500 * time.Millisecond)}
	tl.mark("store")
	tl.mark("cache")
	want := regexp.MustCompile(`^store=\+15\d\dms cache=\+15\d\dms \(main at \d\d:\d\d:\d\d\.\d\d\d\)$`)
	if got := tl.String(); !want.MatchString(got) {
		t.Errorf("timeline %q, want it to match %s", got, want)
	}
}

package report

import (
	"bytes"
	"image/png"
	"testing"
)

// TestLineChart: two units make two panels; a series' line is drawn in
// its colour where its points are, and the y axis reaches its largest
// value.
func TestLineChart(t *testing.T) {
	series := []Series{
		{Name: "rss", Unit: "MiB", Points: []Point{{0, 10}, {1, 10}, {2, 10}}},
		{Name: "fds", Unit: "fds", Points: []Point{{0, 50}, {2, 100}}},
	}
	var buf bytes.Buffer
	if err := WriteLineChart(&buf, "soak", "minutes", series); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != linesWidth || b.Dy() != linesHeader+2*(panelH+panelGap) {
		t.Fatalf("chart is %v, want two panels", img.Bounds())
	}
	// The flat rss line at 10 of a 10 axis: the panel's top edge, midway.
	top := linesHeader + 30
	if got := img.At((linesLeft+linesRight)/2, top); got != systemColor("", 0) {
		t.Errorf("pixel on the rss line = %v, want its colour", got)
	}
	if niceCeil(0) != 1 || niceCeil(7) != 10 || niceCeil(130) != 200 || niceCeil(0.3) != 0.5 {
		t.Errorf("niceCeil: %v %v %v %v", niceCeil(0), niceCeil(7), niceCeil(130), niceCeil(0.3))
	}
}

package runner

import (
	"context"
	"testing"

	"github.com/basin-csi/basin/bench/report"
	"github.com/basin-csi/basin/bench/scenario"
	"github.com/basin-csi/basin/bench/sut"
	"github.com/basin-csi/basin/bench/sut/suttest"
)

// TestMeasureColdPlaysAStoppedPassToItsEnd: a cold phase stopped at its
// deadline is played once more, untimed, before the warm phase; its cell
// keeps the timed part. A cold phase that ended is not played again.
func TestMeasureColdPlaysAStoppedPassToItsEnd(t *testing.T) {
	for _, tc := range []struct {
		name      string
		partial   bool
		wantCalls int
		want      report.Status
	}{
		{"stopped at the deadline", true, 2, report.Partial},
		{"ended", false, 1, report.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New(testConfig(), Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			s := &session{r: r, sys: suttest.New("fake", t.TempDir(), sut.BackendLocal), cells: map[string]report.Cell{}}
			calls := 0
			fn := func(context.Context) (scenario.Measure, error) {
				calls++
				return scenario.Measure{Files: int64(calls), Partial: tc.partial && calls == 1}, nil
			}
			s.measureCold(context.Background(), metaCold, fn, nil)
			if calls != tc.wantCalls {
				t.Errorf("pass played %d times, want %d", calls, tc.wantCalls)
			}
			c := s.cells[metaCold]
			if c.Status != tc.want || c.Measure.Files != 1 {
				t.Errorf("cell %s with %d files, want %s with the timed pass's 1", c.Status, c.Measure.Files, tc.want)
			}
		})
	}
}

package warmup

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReport(t *testing.T) {
	res := Result{Progress: Progress{Elapsed: 2 * time.Second, Files: 4, Bytes: 400, Errors: 1}}
	for _, tc := range []struct {
		name   string
		cache  CacheReport
		runErr error
		fits   string
	}{
		{name: "not a Basin mount", cache: CacheReport{Verdict: "no verdict"}, fits: FitsUnknown},
		{name: "fits", cache: CacheReport{Known: true, Fits: true, Verdict: "fits"}, fits: FitsYes},
		{name: "does not fit", cache: CacheReport{Known: true, Verdict: "does NOT fit"}, fits: FitsNo},
		{name: "interrupted", cache: CacheReport{Known: true, Fits: true}, runErr: errors.New("interrupted"), fits: FitsUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res.Cache = tc.cache
			r := res.Report(tc.runErr)
			if r.Fits != tc.fits || r.Files != 4 || r.Bytes != 400 || r.BytesPerSecond != 200 || r.Errors != 1 {
				t.Errorf("report %+v, want fits %s", r, tc.fits)
			}
			path := filepath.Join(t.TempDir(), "r.json")
			if err := r.WriteFile(path); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := ParseReport(b); err != nil || got != r {
				t.Errorf("round trip: %+v, %v; want %+v", got, err, r)
			}
		})
	}
}

// TestReportLongVerdict: a written report stays within a termination
// message.
func TestReportLongVerdict(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	if err := (Report{Fits: FitsNo, Verdict: strings.Repeat("é", 5000)}).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseReport(b)
	if len(b) > maxReport || err != nil || r.Fits != FitsNo || !strings.HasSuffix(r.Verdict, "...") {
		t.Errorf("%d bytes, %v, %+v", len(b), err, r.Fits)
	}
}

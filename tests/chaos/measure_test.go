package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/cache"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// killAt is one disruption: when it was made and when the volume was
// seen serving again.
type killAt struct{ at, healed time.Time }

// pausesOf returns each kill's pause: the longest a read that overlapped
// it (in flight at the kill, or started before the heal was seen) waited
// beyond the kill.
func pausesOf(rep readerReport, kills []killAt) []time.Duration {
	pauses := make([]time.Duration, 0, len(kills))
	for _, k := range kills {
		var p time.Duration
		for _, op := range rep.Ops {
			start, end := time.Unix(0, op.Start), time.Unix(0, op.End)
			if end.Before(k.at) || start.After(k.healed) {
				continue
			}
			from := k.at
			if start.After(from) {
				from = start
			}
			p = max(p, end.Sub(from))
		}
		pauses = append(pauses, p)
	}
	return pauses
}

// verifyCache opens a volume's cache once its FUSE process is gone and
// fails the test unless it verifies.
func verifyCache(t *testing.T, dir, volumeID string, b bucket) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cache.Open(ctx, dir, objstoretest.NewFake(), cache.Options{VolumeID: volumeID, Origin: "s3://" + b.name + "/ @" + b.srv.Endpoint})
	if err == nil {
		var rep cache.Report
		rep, err = c.Verify(ctx)
		if err != nil {
			err = fmt.Errorf("%w: %v", err, rep.Problems)
		}
		_ = c.Close()
	}
	if err != nil {
		t.Errorf("cache after the chaos: %v", err)
	}
}

// writeSummary logs a summary line and writes it to the file named by
// the environment variable env, when set (make chaos prints it).
func writeSummary(t *testing.T, env, summary string) {
	if path := os.Getenv(env); path != "" {
		_ = os.MkdirAll(filepath.Dir(path), 0o755)
		_ = os.WriteFile(path, []byte(summary+"\n"), 0o644)
	}
	t.Log(summary)
}

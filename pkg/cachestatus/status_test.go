package cachestatus

import (
	"testing"
	"time"

	"github.com/basin-csi/basin/internal/cacheusage"
)

// TestStatusOfDataset: the dataset fields are set only where the size is
// known, and the share never passes 100 (whole blocks).
func TestStatusOfDataset(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	u := cacheusage.Usage{VolumeID: "h", UsedBytes: 250, Objects: 2}
	if st := statusOf(u, nil, now); st.DatasetBytes != nil || st.DatasetObjects != nil || st.CachedPercent != nil {
		t.Errorf("no dataset: %+v", st)
	}
	for _, tt := range []struct {
		used, dataset int64
		want          int32
	}{{250, 1000, 25}, {999, 1000, 99}, {1000, 1000, 100}, {1100, 1000, 100}, {0, 0, 100}, {0, 1000, 0}} {
		u.UsedBytes = tt.used
		st := statusOf(u, &Dataset{Bytes: tt.dataset, Objects: 4}, now)
		if st.CachedPercent == nil || *st.CachedPercent != tt.want || *st.DatasetBytes != tt.dataset || *st.DatasetObjects != 4 {
			t.Errorf("used %d of %d: percent %v, dataset %v/%v; want %d", tt.used, tt.dataset, st.CachedPercent, st.DatasetBytes, st.DatasetObjects, tt.want)
		}
	}
}

// TestStatusOfUploads: the FUSE process's pending uploads, failures and
// conflicts reach the status as published, and a change of them alone is
// written.
func TestStatusOfUploads(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	u := cacheusage.Usage{VolumeID: "h", Uploads: cacheusage.Uploads{PendingUploads: 3, PendingUploadBytes: 300, UploadFailures: 7, CreateConflicts: 1}}
	st := statusOf(u, nil, now)
	if st.PendingUploads != 3 || st.PendingUploadBytes != 300 || st.UploadFailures != 7 || st.CreateConflicts != 1 {
		t.Errorf("status %+v, want the usage's uploads", st)
	}
	u.PendingUploads = 0
	if !needsWrite(st, statusOf(u, nil, now), time.Hour) {
		t.Error("a change of the pending uploads alone is not written")
	}
}

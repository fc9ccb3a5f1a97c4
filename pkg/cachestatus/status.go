package cachestatus

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/basin-csi/basin/internal/cacheusage"
	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
)

// Dataset is the size of a whole volume, where the node knows it.
type Dataset struct {
	Bytes, Objects int64
}

// statusOf is the status a cache's published usage gives, as of now, with
// the dataset's size if ds is not nil. Times are cut to the second: the
// API keeps no finer ones, and a status read back must compare equal to
// the one written.
func statusOf(u cacheusage.Usage, ds *Dataset, now time.Time) basinv1.VolumeCacheStatus {
	st := basinv1.VolumeCacheStatus{
		CachedBytes:   u.UsedBytes,
		CachedSize:    basinv1.FormatSize(u.UsedBytes),
		CachedObjects: u.Objects,
		CapacityBytes: u.Capacity,
		UpdateTime:    metav1.NewTime(now.Truncate(time.Second)),

		SharedCacheDegraded: u.SharedCacheDegraded,
		PendingUploads:      u.PendingUploads,
		PendingUploadBytes:  u.PendingUploadBytes,
		UploadFailures:      u.UploadFailures,
		CreateConflicts:     u.CreateConflicts,
	}
	if last := u.LastAccess(); !last.IsZero() {
		t := metav1.NewTime(last.Truncate(time.Second))
		st.LastUseTime = &t
	}
	if ds != nil {
		st.DatasetBytes, st.DatasetObjects = &ds.Bytes, &ds.Objects
		pct := int32(100) // the cache allocates whole blocks: it may hold more than the files' sizes
		if ds.Bytes > 0 && u.UsedBytes < ds.Bytes {
			pct = int32(u.UsedBytes * 100 / ds.Bytes)
		}
		st.CachedPercent = &pct
	}
	return st
}

// needsWrite reports whether the status have, last written, must be
// replaced by want: when anything but the update time differs, or when
// have is refresh old (so that a node plugin that died shows as stale).
func needsWrite(have, want basinv1.VolumeCacheStatus, refresh time.Duration) bool {
	if want.UpdateTime.Sub(have.UpdateTime.Time) >= refresh {
		return true
	}
	have.UpdateTime, want.UpdateTime = metav1.Time{}, metav1.Time{}
	return !equality.Semantic.DeepEqual(have, want)
}

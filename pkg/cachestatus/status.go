package cachestatus

import (
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
	"github.com/basin-csi/basin/pkg/cache"
)

// statusOf is the status a cache's published usage gives, as of now.
// Times are cut to the second: the API keeps no finer ones, and a status
// read back must compare equal to the one written.
//
// The dataset fields stay unset: nothing on the node records a volume's
// whole size (a warmup logs its totals and keeps no state).
func statusOf(u cache.Usage, now time.Time) basinv1.VolumeCacheStatus {
	st := basinv1.VolumeCacheStatus{
		CachedBytes:   u.UsedBytes,
		CachedSize:    humanSize(u.UsedBytes),
		CachedObjects: u.Objects,
		CapacityBytes: u.Capacity,
		UpdateTime:    metav1.NewTime(now.Truncate(time.Second)),
	}
	if !u.LastAccess.IsZero() {
		t := metav1.NewTime(u.LastAccess.Truncate(time.Second))
		st.LastUseTime = &t
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

// humanSize writes a byte count with binary suffixes and one decimal at
// most, like "1.5Gi" or "512".
func humanSize(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatInt(n, 10)
	}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		s = s[:len(s)-2]
	}
	return s + units[i:i+1] + "i"
}

package v1alpha1

import "strconv"

// FormatSize is a byte count as the types' size fields for people carry it
// (VolumeCacheStatus.CachedSize, WarmupStatus.Size): binary suffixes and one
// decimal at most, "512", "1.5Ki", "19Mi", "1.5Gi".
func FormatSize(n int64) string {
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

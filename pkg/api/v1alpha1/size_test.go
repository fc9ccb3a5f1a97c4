package v1alpha1

import "testing"

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 512: "512", 1023: "1023", 1024: "1Ki", 1536: "1.5Ki", 19 << 20: "19Mi",
		3<<29 + 1: "1.5Gi", 3 << 30: "3Gi", 5 << 40: "5Ti", 1<<40 + 1<<39: "1.5Ti",
	} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

package supervisor

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestLineLog(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		keep   int
		want   []string
	}{
		{"lines split across writes", []string{"he", "llo\nwor", "ld\n"}, 5, []string{"hello", "world"}},
		{"ring keeps the last", []string{"1\n2\n3\n4\n5\n"}, 3, []string{"3", "4", "5"}},
		{"unterminated tail", []string{"a\nb"}, 3, []string{"a", "b"}},
		{"empty lines dropped", []string{"\n\r\nx\n"}, 3, []string{"x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLineLog("vol", tc.keep)
			for _, w := range tc.writes {
				if n, err := l.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := l.Tail(); !slices.Equal(got, tc.want) {
				t.Errorf("Tail = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLineLogBounded(t *testing.T) {
	l := newLineLog("vol", 2)
	_, _ = l.Write([]byte(strings.Repeat("x", 3*maxLineLength)))
	for _, line := range l.Tail() {
		if len(line) > maxLineLength+len("…") {
			t.Errorf("kept a line of %d bytes", len(line))
		}
	}
	for i := range 100 {
		_, _ = fmt.Fprintf(l, "line %d\n", i)
	}
	if got := l.tailMessage(1); got != "; last output: line 99" {
		t.Errorf("tailMessage = %q", got)
	}
}

func TestMountCacheDir(t *testing.T) {
	for _, tc := range []struct {
		argv string
		want bool
	}{
		{"/bin/csi-driver mount --fd 3 --cache-dir /c/v s3://b/", true},
		{"/bin/csi-driver mount --cache-dir=/c/v s3://b/", true},
		{"/bin/csi-driver mount --cache-dir /c/v2 s3://b/", false},
		{"/bin/csi-driver node --cache-dir /c/v", false},
		{"vim --cache-dir /c/v", false},
	} {
		var argv [][]byte
		for _, a := range strings.Fields(tc.argv) {
			argv = append(argv, []byte(a))
		}
		dir, ok := mountCacheDir(argv)
		if got := ok && dir == "/c/v"; got != tc.want {
			t.Errorf("servesCacheDir(%q) = %v, want %v", tc.argv, got, tc.want)
		}
	}
}

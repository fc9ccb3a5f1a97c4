package placement

import (
	"fmt"
	"strings"
	"testing"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
)

func vc(vol, node string, bytes int64, percent *int32) basinv1.VolumeCache {
	c := basinv1.VolumeCache{Spec: basinv1.VolumeCacheSpec{VolumeName: vol, NodeName: node}}
	c.Status.CachedBytes = bytes
	c.Status.CachedPercent = percent
	return c
}

func pct(p int32) *int32 { return &p }

func TestWeigh(t *testing.T) {
	cases := []struct {
		name    string
		volumes []string
		caches  [][]basinv1.VolumeCache
		want    string // node=weight, best first
	}{
		{"percent known", []string{"a"}, [][]basinv1.VolumeCache{{vc("a", "n1", 10, pct(100)), vc("a", "n2", 5, pct(40))}}, "n1=100 n2=40"},
		{"bytes relative to the best node", []string{"a"}, [][]basinv1.VolumeCache{{vc("a", "n1", 200, nil), vc("a", "n2", 50, nil)}}, "n1=100 n2=25"},
		{"nothing cached is no weight", []string{"a"}, [][]basinv1.VolumeCache{{vc("a", "n1", 0, pct(0)), vc("a", "n2", 0, nil)}}, ""},
		{"tiny share weighs 1", []string{"a"}, [][]basinv1.VolumeCache{{vc("a", "n1", 1000, nil), vc("a", "n2", 1, nil)}}, "n1=100 n2=1"},
		{"two volumes: mean of shares", []string{"a", "b"}, [][]basinv1.VolumeCache{
			{vc("a", "n1", 10, pct(100)), vc("a", "n2", 10, pct(100))},
			{vc("b", "n1", 10, pct(50))},
		}, "n1=75 n2=50"},
		{"ties by name", []string{"a"}, [][]basinv1.VolumeCache{{vc("a", "n2", 10, pct(60)), vc("a", "n1", 10, pct(60))}}, "n1=60 n2=60"},
		{"percent clamped", []string{"a"}, [][]basinv1.VolumeCache{{vc("a", "n1", 10, pct(140))}}, "n1=100"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, w := range weigh(c.volumes, c.caches) {
				got = append(got, fmt.Sprintf("%s=%d", w.node, w.weight))
			}
			if s := strings.Join(got, " "); s != c.want {
				t.Errorf("weigh = %q, want %q", s, c.want)
			}
		})
	}
}

func TestWeighBoundsTerms(t *testing.T) {
	var cs []basinv1.VolumeCache
	for i := range 3 * MaxPreferredNodes {
		cs = append(cs, vc("a", fmt.Sprintf("n%03d", i), int64(i+1), nil))
	}
	ws := weigh([]string{"a"}, [][]basinv1.VolumeCache{cs})
	if len(ws) != MaxPreferredNodes {
		t.Fatalf("%d weights, want %d", len(ws), MaxPreferredNodes)
	}
	if ws[0].node != fmt.Sprintf("n%03d", 3*MaxPreferredNodes-1) || ws[0].weight != 100 {
		t.Errorf("best = %+v, want the node with the most bytes at 100", ws[0])
	}
	for _, w := range ws {
		if w.weight < 1 || w.weight > 100 {
			t.Errorf("weight %d out of 1-100", w.weight)
		}
	}
}

func TestPreferredReason(t *testing.T) {
	ws := weigh([]string{"pv-x"}, [][]basinv1.VolumeCache{{vc("pv-x", "localhost", 1<<30, pct(100))}})
	if got, want := preferredReason(ws), "preferred localhost (weight 100: 100% of pv-x cached)"; got != want {
		t.Errorf("reason %q, want %q", got, want)
	}
	ws = weigh([]string{"pv-x"}, [][]basinv1.VolumeCache{{vc("pv-x", "a", 2<<30, nil), vc("pv-x", "b", 1<<30, nil),
		vc("pv-x", "c", 1<<29, nil), vc("pv-x", "d", 1<<28, nil)}})
	got := preferredReason(ws)
	for _, want := range []string{"a (weight 100: 2Gi of pv-x cached, 100% of the most on a node)", "b (weight 50: 1Gi", "and 1 more"} {
		if !strings.Contains(got, want) {
			t.Errorf("reason %q lacks %q", got, want)
		}
	}
}

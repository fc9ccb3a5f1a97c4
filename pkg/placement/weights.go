package placement

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
)

// MaxPreferredNodes bounds the terms added to one pod: the best nodes
// only, so a volume cached on hundreds of nodes does not grow every pod's
// spec by hundreds of terms.
const MaxPreferredNodes = 16

// share is how much of one volume one node holds, 0-100.
type share struct {
	volume  string
	percent int64 // 0-100
	// known is true when percent is the node's own CachedPercent (a share
	// of the whole dataset); false when it is relative to the node that
	// holds the most bytes of the volume.
	known bool
	bytes int64
}

// nodeWeight is the preference for one node.
type nodeWeight struct {
	node   string
	weight int32 // 1-100
	shares []share
}

// weigh turns the caches of each of a pod's volumes (volumes[i] is
// caches[i]'s volume) into node weights, best first, at most
// MaxPreferredNodes. A node's share of a volume is its CachedPercent where
// the node knows the dataset's size, else its cached bytes relative to
// the node that holds the most of that volume; its weight is the sum of
// its shares over the pod's volumes divided by the number of volumes, so
// that a node holding all of every volume weighs 100 and one holding half
// of one of two volumes weighs 25. Nodes holding nothing get no weight.
func weigh(volumes []string, caches [][]basinv1.VolumeCache) []nodeWeight {
	sums := map[string]*nodeWeight{}
	totals := map[string]int64{}
	for i, vol := range volumes {
		var most int64
		for _, c := range caches[i] {
			most = max(most, c.Status.CachedBytes)
		}
		for _, c := range caches[i] {
			s := share{volume: vol, bytes: c.Status.CachedBytes}
			switch {
			case c.Status.CachedBytes <= 0:
				continue
			case c.Status.CachedPercent != nil:
				s.percent, s.known = int64(min(max(*c.Status.CachedPercent, 0), 100)), true
			default:
				s.percent = c.Status.CachedBytes * 100 / most
			}
			n := c.Spec.NodeName
			if n == "" {
				continue
			}
			if sums[n] == nil {
				sums[n] = &nodeWeight{node: n}
			}
			sums[n].shares = append(sums[n].shares, s)
			totals[n] += s.percent
		}
	}
	out := make([]nodeWeight, 0, len(sums))
	for n, w := range sums {
		// Round up: any data cached is worth weight 1.
		w.weight = int32(min(100, max(1, (totals[n]+int64(len(volumes))-1)/int64(len(volumes)))))
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b nodeWeight) int {
		if c := cmp.Compare(b.weight, a.weight); c != 0 {
			return c
		}
		return strings.Compare(a.node, b.node)
	})
	if len(out) > MaxPreferredNodes {
		out = out[:MaxPreferredNodes]
	}
	return out
}

// maxNodesInReason bounds the nodes the annotation names.
const maxNodesInReason = 3

// preferredReason is the annotation of a pod that got preferences:
// "preferred n1 (weight 100: 100% of pv-a cached), n2 (weight 40: 1Gi of
// pv-a cached, 40% of the most on a node)".
func preferredReason(ws []nodeWeight) string {
	parts := make([]string, 0, min(len(ws), maxNodesInReason))
	for _, w := range ws[:min(len(ws), maxNodesInReason)] {
		what := make([]string, len(w.shares))
		for i, s := range w.shares {
			if s.known {
				what[i] = fmt.Sprintf("%d%% of %s cached", s.percent, s.volume)
			} else {
				what[i] = fmt.Sprintf("%s of %s cached, %d%% of the most on a node", resource.NewQuantity(s.bytes, resource.BinarySI), s.volume, s.percent)
			}
		}
		parts = append(parts, fmt.Sprintf("%s (weight %d: %s)", w.node, w.weight, strings.Join(what, ", ")))
	}
	r := "preferred " + strings.Join(parts, ", ")
	if more := len(ws) - len(parts); more > 0 {
		r += fmt.Sprintf(" and %d more", more)
	}
	return r
}

package runner

import "github.com/basin-csi/basin/bench/dataset"

// Writes reports whether scenario n changes the bucket (write, create):
// n/a for a read-only system, and its data set is not in the bucket
// before it runs.
func Writes(n int) bool { return n == 5 || n == 7 }

// ScenarioSet is the data set scenario n reads or, for Writes(n), writes.
func ScenarioSet(sets Sets, n int) dataset.Set {
	switch n {
	case 1, 6:
		return sets.Small
	case 2, 3:
		return sets.Checkpoint
	case 4:
		return sets.Tree
	case 5:
		return sets.Write
	case 7:
		return sets.Create
	default:
		return sets.Images
	}
}

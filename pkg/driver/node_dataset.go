package driver

import (
	"github.com/basin-csi/basin/pkg/warmup"
)

// Dataset is the size of a whole volume, as the last complete warmup of
// all of it (the warmup attribute "/") found it on this node. The node
// plugin knows no other way to learn it (it never lists a whole bucket
// otherwise); it is kept in memory, so a restarted plugin knows it again
// after the volume's next stage.
type Dataset struct {
	Bytes, Objects int64
}

// recordDataset keeps what a warmup of the whole volume found, if it
// walked and read everything, and tells NodeConfig.VolumesChanged.
func (n *Node) recordDataset(id string, res warmup.Result) {
	if !res.WalkDone || res.Errors > 0 || res.MetadataOnly {
		return
	}
	n.mu.Lock()
	n.datasets[id] = Dataset{Bytes: res.FoundBytes, Objects: res.FoundFiles}
	n.mu.Unlock()
	n.volumesChanged()
}

// Dataset returns the size of volume id, if a warmup of all of it ran
// since the plugin started.
func (n *Node) Dataset(id string) (Dataset, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	d, ok := n.datasets[id]
	return d, ok
}

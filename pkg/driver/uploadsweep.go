package driver

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/objstore"
)

// The controller's periodic pass over volumes: every UploadSweepInterval
// it aborts the incomplete multipart uploads older than
// objstore.AbandonedAge in each volume's bucket and prefix — those a FUSE
// process killed mid-upload left and no successor on its node aborted
// (the volume was never mounted there again). The FUSE processes abort
// their own predecessors' at takeover and sweep the volumes they serve
// (pkg/fuse orphans.go); this pass covers volumes nobody mounts. The
// controller keeps no credentials between requests, so the caller lists
// the volumes with the secret their DeleteVolume would get (the
// PersistentVolumes, in cmd/csi-driver). basin_controller_aborted_uploads_total
// counts the aborted uploads.

// UploadSweepInterval is how often the controller sweeps every volume.
const UploadSweepInterval = 6 * time.Hour

// SweptVolume is one volume the pass visits.
type SweptVolume struct {
	// ID is the CSI volume ID (the PersistentVolume's volume handle).
	ID string
	// Secrets is the secret map DeleteVolume would get (the provisioner
	// secret); empty uses the default credential chain.
	Secrets map[string]string
}

// UploadSweeper is the controller's periodic pass.
type UploadSweeper struct {
	// constant
	c       *Controller
	aborted prometheus.Counter
}

// NewUploadSweeper returns the pass of c, its counter registered with reg
// (nil: not exported).
func NewUploadSweeper(c *Controller, reg prometheus.Registerer) (*UploadSweeper, error) {
	aborted := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "basin_controller_aborted_uploads_total",
		Help: "Incomplete multipart uploads older than a day that the controller's periodic pass aborted in the volumes' buckets.",
	})
	if reg != nil {
		if err := reg.Register(aborted); err != nil {
			return nil, err
		}
	}
	return &UploadSweeper{c: c, aborted: aborted}, nil
}

// Run sweeps the volumes list returns now and every interval until ctx
// ends. A volume that fails is logged and tried again at the next pass.
func (s *UploadSweeper) Run(ctx context.Context, interval time.Duration, list func(context.Context) ([]SweptVolume, error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		vols, err := list(ctx)
		if err != nil {
			klog.ErrorS(err, "listing volumes for the sweep of abandoned uploads")
		}
		total := 0
		for _, v := range vols {
			n, err := s.Sweep(ctx, v, time.Now().Add(-objstore.AbandonedAge))
			total += n
			if err != nil {
				klog.ErrorS(err, "sweeping abandoned uploads", "volume", v.ID, "aborted", n)
			}
		}
		klog.V(2).InfoS("swept abandoned uploads", "volumes", len(vols), "aborted", total)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep aborts the incomplete uploads of one volume begun before cutoff
// and returns how many. Volumes of stores without such uploads (GCS, a
// directory) and IDs that are not Basin's cost nothing.
func (s *UploadSweeper) Sweep(ctx context.Context, v SweptVolume, cutoff time.Time) (int, error) {
	vid, err := parseVolumeID(v.ID)
	if err != nil {
		return 0, nil // not Basin's
	}
	if vid.Backend != objstore.BackendS3 && vid.Backend != objstore.BackendOSS {
		return 0, nil
	}
	secrets, err := parseSecretsFor(vid.Backend, v.Secrets)
	if err != nil {
		return 0, err
	}
	cn, err := s.c.connect(vid, secrets.Endpoint, secrets)
	if err != nil {
		return 0, err
	}
	store, err := cn.open(ctx)
	if err != nil {
		return 0, explainCredentials(err, vid.Backend, secrets)
	}
	defer func() { _ = store.Close() }()
	ups, ok := objstore.UploadsOf(objstore.WithPrefix(store, vid.Prefix))
	if !ok {
		return 0, nil
	}
	n, err := objstore.AbortUploads(ctx, ups, "", func(u objstore.Upload) bool { return u.Initiated.Before(cutoff) })
	s.aborted.Add(float64(n))
	if n > 0 {
		klog.InfoS("aborted abandoned uploads", "volume", v.ID, "uploads", n)
	}
	if err != nil {
		return n, fmt.Errorf("volume %s: %w", v.ID, explainCredentials(err, vid.Backend, secrets))
	}
	return n, nil
}

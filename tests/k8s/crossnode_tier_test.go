//go:build k8se2e

package k8s

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

// The shared-tier scenario's figures: a few hundred small files (each
// one tier object, stored whole) and one file of several cache blocks
// (above the cache's small-object size, 8 MiB: one tier object per
// block).
const (
	tierSmallFiles = 300
	tierSmallSize  = 64 << 10
	tierBigMiB     = 64
	// tierFillWait bounds the wait for node A's background uploads.
	tierFillWait = 3 * time.Minute
)

// tierReader is the reader pods' script: the digests of the small files
// (as datasetReader prints them) and of the big file, then it stays, so
// that its node's FUSE process (and its metrics) stays too.
const tierReader = `echo small=$(sha256sum /data/small/* | sha256sum | cut -d' ' -f1)
echo big=$(sha256sum /data/big.bin | cut -d' ' -f1)
echo READY
sleep 3600`

// TestSharedTierAcrossNodes is the shared cache tier between nodes: a
// static ReadOnlyMany volume whose sharedCache is a second bucket of the
// cluster's MinIO. A reader pod on node A reads the whole dataset (small
// files and a 64 MiB file) from the origin bucket, and node A stores it in
// the tier in the background; once the tier holds all of it, a reader
// pod on node B reads the whole dataset with zero GetObject requests to
// the origin bucket (from either node), counted by MinIO itself and by
// B's FUSE process, every byte from the tier. Both read it byte-exact.
func TestSharedTierAcrossNodes(t *testing.T) {
	scenario(t, "shared-tier-across-nodes")
	a, b, _ := threeNodes(t)
	const name, handle = "e2e-xnode-tier", "e2e-xnode-tier-vol"
	tierBucket := name + "-cache"
	ns := namespace(t, name)
	origin := openBucket(t, name, true)
	tierStore := openBucket(t, tierBucket, true)

	sums := putObjects(t, origin, "small/", tierSmallFiles, tierSmallSize)
	big := content("big.bin", tierBigMiB<<20)
	if _, err := origin.Put(t.Context(), "big.bin", bytes.NewReader(big), objstore.PutOptions{Size: int64(len(big))}); err != nil {
		t.Fatal(err)
	}
	wantSmall, wantBig := digest(sumsListing("/data/small", "small/", sums)), digest(string(big))
	dataBytes := float64(tierSmallFiles*tierSmallSize + len(big))
	// One tier object per small file, one per cache block of big.bin.
	blocks := (int64(len(big)) + mountspec.DefaultCacheBlockSize - 1) / mountspec.DefaultCacheBlockSize
	wantTier := tierSmallFiles + int(blocks)

	// The tier's credentials are keys of the volume's secret, as the
	// origin's are (here the same MinIO user).
	apply(t, secretYAML(name+"-creds", env.AccessKey, env.SecretKey, env.MinIOClusterEndpoint)+
		fmt.Sprintf("  sharedCacheAccessKeyID: %q\n  sharedCacheSecretAccessKey: %q\n", env.AccessKey, env.SecretKey))
	t.Cleanup(func() {
		_, _ = kubectlErr("-n", "basin-system", "delete", "secret", name+"-creds", "--ignore-not-found")
	})
	staticVolumeWithSecret(t, ns, name, handle, name, "", "ReadOnlyMany",
		map[string]string{"sharedCache": env.MinIOClusterEndpoint + "/" + tierBucket})

	// Node A: every byte from the origin, which MinIO counts.
	gets0 := bucketRequests(t, name, "GetObject")
	readDataset(t, ns, name, "reader-a", a, wantSmall, wantBig)
	getsA := bucketRequests(t, name, "GetObject") - gets0
	if getsA < tierSmallFiles+1 {
		t.Fatalf("MinIO counted %v GetObject requests on the origin bucket for %s's cold read of %d files, want at least %d (are its per-bucket metrics counted?)",
			getsA, a, tierSmallFiles+1, tierSmallFiles+1)
	}
	filledA := waitTierFilled(t, a, handle, tierStore, wantTier)
	putsA := bucketRequests(t, tierBucket, "PutObject")

	// Node B: nothing from the origin, everything from the tier. A's pod
	// stays, idle: the origin's count covers both nodes.
	gets1, tierGets1 := bucketRequests(t, name, "GetObject"), bucketRequests(t, tierBucket, "GetObject")
	readDataset(t, ns, name, "reader-b", b, wantSmall, wantBig)
	mb := scrape(t, nodeMetrics(t, b))
	volB := tierVolume(t, mb, b, handle)
	vol := map[string]string{"volume": volB}
	if up := sample(mb, "basin_volume_scrape_up", vol); up != 1 {
		t.Fatalf("basin_volume_scrape_up{volume=%q} on %s = %v, want 1", volB, b, up)
	}
	basinGets := sample(mb, "basin_bucket_requests_total", map[string]string{"volume": volB, "op": "get"})
	hits, hitBytes := sample(mb, "basin_cache_tier_hits_total", vol), sample(mb, "basin_cache_tier_hit_bytes_total", vol)
	getsB := bucketRequests(t, name, "GetObject") - gets1
	tierGetsB := bucketRequests(t, tierBucket, "GetObject") - tierGets1
	t.Logf("%s: %v GetObject on the origin (%s), %v PutObject on the tier, %d tier objects; %s: %v GetObject on the origin (its FUSE process counted %v), %v on the tier, %v tier hits of %.0f bytes (%s), dataset %.0f bytes",
		a, getsA, filledA, putsA, wantTier, b, getsB, basinGets, tierGetsB, hits, hitBytes, tierSummary(mb, vol), dataBytes)
	if getsB != 0 {
		t.Errorf("MinIO counted %v GetObject requests on the origin bucket while %s read the dataset the tier held, want 0", getsB, b)
	}
	if basinGets != 0 {
		t.Errorf("%s's FUSE process counted %v GETs from the origin bucket, want 0", b, basinGets)
	}
	if hits <= 0 {
		t.Errorf("%s's FUSE process counted %v tier hits, want more than 0", b, hits)
	}
	if hitBytes < dataBytes {
		t.Errorf("%s read %.0f bytes from the tier, want the whole dataset (%.0f bytes)", b, hitBytes, dataBytes)
	}
	if tierGetsB < hits {
		t.Errorf("MinIO counted %v GetObject requests on the tier bucket while %s read, fewer than its %v tier hits", tierGetsB, b, hits)
	}
}

// readDataset runs a tierReader pod of claim on node and checks what it
// read.
func readDataset(t *testing.T, ns, claim, name, node, wantSmall, wantBig string) {
	t.Helper()
	runPod(t, ns, pod{Name: name, Claim: claim, Script: tierReader, ReadOnly: true, Node: node})
	start := time.Now()
	waitLog(t, ns, name, "READY", 5*time.Minute)
	if got := podNode(ns, name); got != node {
		t.Fatalf("%s ran on %s, want %s", name, got, node)
	}
	log := kubectl(t, "-n", ns, "logs", name)
	t.Logf("%s read the dataset on %s within %v", name, node, time.Since(start).Round(100*time.Millisecond))
	if got := logValue(log, "small"); got != wantSmall {
		t.Errorf("%s on %s read the small files as %q, want %s", name, node, got, wantSmall)
	}
	if got := logValue(log, "big"); got != wantBig {
		t.Errorf("%s on %s read big.bin as %q, want %s", name, node, got, wantBig)
	}
}

// waitTierFilled waits until the tier bucket holds want objects and
// node's fill queue of the volume with handle is empty: the uploads run
// in the background after the reads that fetched the blocks. It returns
// the node's tier counters of the volume then.
func waitTierFilled(t *testing.T, node, handle string, tierStore objstore.Store, want int) string {
	t.Helper()
	end := time.Now().Add(tierFillWait)
	for {
		n := len(keys(t, tierStore, ""))
		m := scrape(t, nodeMetrics(t, node))
		label, err := tierVolumeOf(m, handle)
		vol := map[string]string{"volume": label}
		queued := sample(m, "basin_cache_tier_fill_queue", vol)
		if err == nil && n == want && queued == 0 {
			return tierSummary(m, vol)
		}
		if n > want {
			t.Fatalf("the tier holds %d objects, more than the %d of the dataset (%s)", n, want, tierSummary(m, vol))
		}
		if time.Now().After(end) {
			t.Fatalf("after %v the tier holds %d of the dataset's %d objects, %v uploads queued on %s (%s; %v)",
				tierFillWait, n, want, queued, node, tierSummary(m, vol), err)
		}
		time.Sleep(time.Second)
	}
}

// tierVolume is the volume label under which node's plugin reports the
// FUSE process serving handle: handle, or the ID of the share serving it
// (read-only volumes of one source share a process on a node, named by
// the share). Only a process of a volume with a sharedCache has tier
// metrics, and the scenario's volume is the only one: it is the one
// label with them.
func tierVolume(t *testing.T, m map[string]*dto.MetricFamily, node, handle string) string {
	t.Helper()
	label, err := tierVolumeOf(m, handle)
	if err != nil {
		t.Fatalf("%s: %v", node, err)
	}
	return label
}

// tierVolumeOf is tierVolume's finding, or why there is none.
func tierVolumeOf(m map[string]*dto.MetricFamily, handle string) (string, error) {
	var labels []string
	for _, s := range m["basin_cache_tier_hits_total"].GetMetric() {
		for _, l := range s.GetLabel() {
			if l.GetName() == "volume" {
				labels = append(labels, l.GetValue())
			}
		}
	}
	if slices.Contains(labels, handle) {
		return handle, nil
	}
	if len(labels) != 1 {
		return "", fmt.Errorf("tier metrics for the volumes %q, want one: %s or the share serving it", labels, handle)
	}
	return labels[0], nil
}

// tierSummary is a volume's tier counters, for logs and failures.
func tierSummary(m map[string]*dto.MetricFamily, vol map[string]string) string {
	v := func(name string) float64 { return sample(m, "basin_cache_tier_"+name, vol) }
	return fmt.Sprintf("tier hits %v, misses %v, filled %v, already stored %v, dropped %v, errors %v, corrupt %v, degraded %v",
		v("hits_total"), v("misses_total"), v("filled_total"), v("fill_existing_total"), v("fill_dropped_total"),
		v("errors_total"), v("corrupt_total"), v("degraded"))
}

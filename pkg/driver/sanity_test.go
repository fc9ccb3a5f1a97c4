package driver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/backend"
	"github.com/basin-csi/basin/pkg/objstore/objstoretest"
)

// sanityIDs makes csi-sanity's "valid" volume IDs real Basin IDs of
// volumes that do not exist, so ValidateVolumeCapabilities has to ask the
// store instead of rejecting the format.
type sanityIDs struct {
	sanity.DefaultIDGenerator
	base volumeID
}

func (g sanityIDs) GenerateUniqueValidVolumeID() string {
	v := g.base
	v.Prefix = uniqueName("sanity-missing-") + "/"
	return v.String()
}

// TestSanity runs csi-sanity (github.com/kubernetes-csi/csi-test/v5) against
// the Identity, Controller and Node services in one process with a real
// MinIO, provisioning prefixes inside a bucket; the node stages every
// volume with a real FUSE process.
func TestSanity(t *testing.T) {
	s := minioStore(t)
	node := startNode(t, nil)
	h := startDriver(t, ControllerConfig{}, node.node)
	dir := filepath.Join(node.dir, "sanity")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}

	secrets := map[string]map[string]string{}
	for _, k := range []string{"CreateVolumeSecret", "DeleteVolumeSecret", "ControllerValidateVolumeCapabilitiesSecret", "NodeStageVolumeSecret"} {
		secrets[k] = s.secrets
	}
	secretsFile := filepath.Join(dir, "secrets.yaml")
	writeJSON(t, secretsFile, secrets) // YAML is a superset of JSON

	cfg := sanity.NewTestConfig()
	cfg.Address = h.endpoint
	cfg.TargetPath = filepath.Join(dir, "target")
	cfg.StagingPath = filepath.Join(dir, "staging")
	cfg.SecretsFile = secretsFile
	cfg.TestVolumeSize = 1 << 30
	cfg.TestVolumeParameters = with(s.params, mountspec.KeyBucket, s.parent, mountspec.KeyPrefix, "sanity")
	cfg.IDGen = sanityIDs{base: volumeID{Backend: "s3", Provisioning: volumeattr.ProvisionPrefix, Reclaim: volumeattr.ReclaimDelete,
		PathStyle: true, Region: s.params[mountspec.KeyRegion], EndpointFP: endpointFingerprint(s.secrets[volumeattr.SecretEndpoint]), Bucket: s.parent}}

	sc := sanity.GinkgoTest(&cfg)
	gomega.RegisterFailHandler(ginkgo.Fail)
	suite, reporter := ginkgo.GinkgoConfiguration()
	reportFile := filepath.Join(dir, "report.json")
	reporter.JSONReport = reportFile
	ok := ginkgo.RunSpecs(t, "Basin CSI sanity (identity, controller, node; MinIO)", suite, reporter)
	sc.Finalize()

	passed, failed, skipped := sanityCounts(t, reportFile)
	t.Logf("csi-sanity: %d specs passed, %d failed, %d skipped", passed, failed, skipped)
	if !ok || failed > 0 {
		t.Errorf("csi-sanity failed (%d specs)", failed)
	}
	// Identity, Controller and Node specs must have run.
	if passed < 40 {
		t.Errorf("only %d specs passed; the suite did not run what it should", passed)
	}
	// Every volume sanity created was deleted: nothing is left under the prefix.
	parent := openParent(t, s)
	if keys, _ := objstoretest.Keys(t, parent, objstore.ListOptions{}); len(keys) > 0 {
		t.Errorf("csi-sanity left objects behind: %q", keys)
	}
}

// sanityCounts reads ginkgo's JSON report.
func sanityCounts(t *testing.T, path string) (passed, failed, skipped int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var reports []types.Report
	if err := json.Unmarshal(b, &reports); err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		for _, s := range r.SpecReports {
			if s.LeafNodeType != types.NodeTypeIt {
				continue
			}
			switch {
			case s.State == types.SpecStatePassed:
				passed++
			case s.State.Is(types.SpecStateFailureStates):
				failed++
			default:
				skipped++
			}
		}
	}
	return passed, failed, skipped
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// openParent opens the parent bucket of a store setup.
func openParent(t *testing.T, s store) objstore.Store {
	t.Helper()
	st, err := backend.Open(t.Context(), s.cfg, s.creds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

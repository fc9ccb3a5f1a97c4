package conventions

import (
	"testing"

	basinv1 "github.com/basin-csi/basin/pkg/api/v1alpha1"
	"github.com/basin-csi/basin/pkg/mountspec"
)

// TestSharedCacheAttributeKey: the Warmup controller, which may not import
// pkg/mountspec, names the sharedCache attribute with its own constant.
func TestSharedCacheAttributeKey(t *testing.T) {
	if basinv1.SharedCacheAttribute != mountspec.KeySharedCache {
		t.Errorf("basinv1.SharedCacheAttribute %q != mountspec.KeySharedCache %q", basinv1.SharedCacheAttribute, mountspec.KeySharedCache)
	}
}

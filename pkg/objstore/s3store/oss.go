package s3store

import (
	"fmt"
	"strings"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Alibaba OSS goes through this adapter, over OSS's S3-compatible API,
// rather than through Alibaba's own SDK (alibabacloud-oss-go-sdk-v2).
//
// Why: no OSS emulator exists, so an adapter on the OSS SDK could only be
// tested against the real cloud, which CI cannot reach. Through the S3 API
// OSS shares one code path with S3 and MinIO, and that path is exercised
// end to end by the conformance suite against a real server (MinIO). The
// OSS-specific part is small and lives here: the default endpoint, a
// required region, virtual-hosted addressing by default (OSS refuses
// path-style requests on its public endpoints) and "when required"
// checksums (OSS does not accept the SDK's aws-chunked trailing checksums).

// ossEndpoint is the S3-compatible public OSS endpoint Alibaba documents
// ("Access OSS using AWS SDKs") for a region id such as
// "cn-hangzhou".
func ossEndpoint(region string) string {
	return "https://s3.oss-" + region + ".aliyuncs.com"
}

// ossRegion normalises an OSS region: "oss-cn-hangzhou" and "cn-hangzhou"
// both name region "cn-hangzhou", which is also the SigV4 signing region.
func ossRegion(region string) (string, error) {
	r := strings.TrimPrefix(strings.TrimSpace(region), "oss-")
	if r == "" {
		return "", fmt.Errorf("%w: oss needs a region (e.g. cn-hangzhou)", objstore.ErrInvalidConfig)
	}
	return r, nil
}

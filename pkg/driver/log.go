package driver

import (
	"context"
	"strings"
	"time"

	"github.com/kubernetes-csi/csi-lib-utils/protosanitizer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
)

// Log verbosity of the gRPC calls: the sidecars' Identity calls (probes
// every few seconds) are quieter than everything else.
const (
	logCallsV    = 2
	logIdentityV = 5
)

// logCalls is the unary interceptor that logs every call with its volume,
// its request and response with secrets stripped (protosanitizer), how
// long it took and, on failure, the gRPC code.
func logCalls(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	v := klog.Level(logCallsV)
	if strings.HasPrefix(info.FullMethod, "/csi.v1.Identity/") {
		v = logIdentityV
	}
	kv := []any{"method", info.FullMethod}
	if id := volumeOf(req); id != "" {
		kv = append(kv, "volume", id)
	}
	logger := klog.V(v)
	if logger.Enabled() {
		logger.InfoS("gRPC call", append(kv, "request", protosanitizer.StripSecrets(req))...)
	}
	start := time.Now()
	resp, err := handler(ctx, req)
	kv = append(kv, "duration", time.Since(start))
	if err != nil {
		klog.ErrorS(err, "gRPC call failed", append(kv, "code", status.Code(err))...)
		return resp, err
	}
	if logger.Enabled() {
		logger.InfoS("gRPC call done", append(kv, "response", protosanitizer.StripSecrets(resp))...)
	}
	return resp, nil
}

// volumeOf returns the volume a request is about: its volume ID, or the
// name of a volume to create.
func volumeOf(req any) string {
	if r, ok := req.(interface{ GetVolumeId() string }); ok && r.GetVolumeId() != "" {
		return r.GetVolumeId()
	}
	if r, ok := req.(interface{ GetName() string }); ok {
		return r.GetName()
	}
	return ""
}

package metrics

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Bucket operation label values (the op label of the basin_bucket_*
// metrics).
const (
	OpStat         = "stat"
	OpGet          = "get"
	OpList         = "list"
	OpPut          = "put"
	OpDelete       = "delete"
	OpCopy         = "copy"
	OpDeletePrefix = "delete_prefix"
)

// latencyBuckets span a local store's sub-millisecond answers to a slow
// WAN GET of a large part (1 ms to about a minute).
var latencyBuckets = prometheus.ExponentialBuckets(0.001, 2.5, 13)

// StoreMetrics counts and times bucket requests. Wrap a Store with it.
type StoreMetrics struct {
	// constant
	requests, errs, bytes *prometheus.CounterVec
	duration              *prometheus.HistogramVec
	getDuration           prometheus.Histogram
}

// NewStoreMetrics creates the bucket metrics and registers them with reg.
func NewStoreMetrics(reg prometheus.Registerer) (*StoreMetrics, error) {
	m := &StoreMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "basin_bucket_requests_total",
			Help: "Requests to the bucket, by operation.",
		}, []string{"op"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "basin_bucket_request_errors_total",
			Help: "Failed requests to the bucket (a GET whose body failed included), by operation and reason.",
		}, []string{"op", "reason"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "basin_bucket_bytes_total",
			Help: "Bytes read from (op=get) and written to (op=put) the bucket.",
		}, []string{"op"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "basin_bucket_request_duration_seconds",
			Help:    "Time until the bucket answered a request, by operation (get: until the first byte).",
			Buckets: latencyBuckets,
		}, []string{"op"}),
		getDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "basin_bucket_get_duration_seconds",
			Help:    "Time of a GET from the request until its body was closed: the latency of one fetch of a block, part or object.",
			Buckets: latencyBuckets,
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.errs, m.bytes, m.duration, m.getDuration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Wrap returns s instrumented with m. Closing it closes s.
func (m *StoreMetrics) Wrap(s objstore.Store) objstore.Store {
	return &store{next: s, m: m}
}

// store is an objstore.Store that records every request in m.
type store struct {
	// constant
	next objstore.Store
	m    *StoreMetrics
}

// observe records one finished request that started at start.
func (m *StoreMetrics) observe(op string, start time.Time, err error) {
	m.requests.WithLabelValues(op).Inc()
	m.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil {
		m.errs.WithLabelValues(op, Reason(err)).Inc()
	}
}

// Reason classifies a bucket error for the reason label.
func Reason(err error) string {
	for _, r := range []struct {
		err  error
		name string
	}{
		{objstore.ErrNotFound, "not_found"},
		{objstore.ErrAccessDenied, "access_denied"},
		{objstore.ErrExists, "exists"},
		{objstore.ErrPreconditionFailed, "precondition_failed"},
		{objstore.ErrThrottled, "throttled"},
		{objstore.ErrUnavailable, "unavailable"},
		{objstore.ErrInvalidRange, "invalid_range"},
		{context.Canceled, "canceled"},
		{context.DeadlineExceeded, "timeout"},
	} {
		if errors.Is(err, r.err) {
			return r.name
		}
	}
	return "other"
}

func (s *store) Stat(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	start := time.Now()
	info, err := s.next.Stat(ctx, key)
	s.m.observe(OpStat, start, err)
	return info, err
}

func (s *store) Read(ctx context.Context, key string, opts objstore.ReadOptions) (io.ReadCloser, objstore.ObjectInfo, error) {
	start := time.Now()
	rc, info, err := s.next.Read(ctx, key, opts)
	s.m.observe(OpGet, start, err)
	if err != nil {
		return rc, info, err
	}
	return &body{ReadCloser: rc, m: s.m, start: start, bytes: s.m.bytes.WithLabelValues(OpGet)}, info, nil
}

func (s *store) List(ctx context.Context, opts objstore.ListOptions) (objstore.ListPage, error) {
	start := time.Now()
	page, err := s.next.List(ctx, opts)
	s.m.observe(OpList, start, err)
	return page, err
}

func (s *store) Put(ctx context.Context, key string, r io.Reader, opts objstore.PutOptions) (objstore.ObjectInfo, error) {
	start := time.Now()
	info, err := s.next.Put(ctx, key, r, opts)
	s.m.observe(OpPut, start, err)
	if err == nil {
		s.m.bytes.WithLabelValues(OpPut).Add(float64(info.Size))
	}
	return info, err
}

// StartStream forwards to the store; the stream's Complete counts as one
// put of the whole object (its parts are not counted one by one).
func (s *store) StartStream(ctx context.Context, key string, src io.ReaderAt, opts objstore.StreamOptions) (objstore.Stream, error) {
	st, err := s.next.StartStream(ctx, key, src, opts)
	if err != nil {
		s.m.observe(OpPut, time.Now(), err)
		return nil, err
	}
	return &stream{Stream: st, m: s.m, start: time.Now()}, nil
}

// stream records a streamed upload when it completes.
type stream struct {
	objstore.Stream
	// constant
	m     *StoreMetrics
	start time.Time
}

func (s *stream) Complete(ctx context.Context, size int64) (objstore.ObjectInfo, error) {
	info, err := s.Stream.Complete(ctx, size)
	s.m.observe(OpPut, s.start, err)
	if err == nil {
		s.m.bytes.WithLabelValues(OpPut).Add(float64(info.Size))
	}
	return info, err
}

func (s *store) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := s.next.Delete(ctx, key)
	s.m.observe(OpDelete, start, err)
	return err
}

func (s *store) Copy(ctx context.Context, src, dst string) (objstore.ObjectInfo, error) {
	start := time.Now()
	info, err := s.next.Copy(ctx, src, dst)
	s.m.observe(OpCopy, start, err)
	return info, err
}

var _ objstore.MetadataSetter = (*store)(nil)

// SetMetadata forwards; it counts as a copy (S3 copies the object onto
// itself).
func (s *store) SetMetadata(ctx context.Context, key string, meta map[string]string, ifVersion string) (objstore.ObjectInfo, error) {
	start := time.Now()
	info, err := objstore.SetMetadataOf(ctx, s.next, key, meta, ifVersion)
	s.m.observe(OpCopy, start, err)
	return info, err
}

func (s *store) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	start := time.Now()
	n, err := s.next.DeletePrefix(ctx, prefix)
	s.m.observe(OpDeletePrefix, start, err)
	return n, err
}

func (s *store) Close() error { return s.next.Close() }

// Unwrap is the store s instruments (objstore.Wrapper).
func (s *store) Unwrap() objstore.Store { return s.next }

// body counts a GET's bytes as they are read and times the GET when it
// is closed.
type body struct {
	io.ReadCloser
	// constant
	m     *StoreMetrics
	start time.Time
	bytes prometheus.Counter

	failed, closed atomic.Bool
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.bytes.Add(float64(n))
	}
	if err != nil && !errors.Is(err, io.EOF) && !b.failed.Swap(true) {
		b.m.errs.WithLabelValues(OpGet, Reason(err)).Inc()
	}
	return n, err
}

func (b *body) Close() error {
	if !b.closed.Swap(true) {
		b.m.getDuration.Observe(time.Since(b.start).Seconds())
	}
	return b.ReadCloser.Close()
}

package tiersweep

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/pkg/cache/tier"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/objstore/backend"
)

// Defaults of Config.
const (
	DefaultInterval    = 10 * time.Minute
	DefaultPassTimeout = 30 * time.Minute
	// RequestTimeout and MaxAttempts bound each request of a pass: a
	// listing page or a batch of 1000 deletes, not the data path's 2 s.
	RequestTimeout = 30 * time.Second
	MaxAttempts    = 3
)

// Volume is one volume with a shared cache tier.
type Volume struct {
	// Name names the volume in logs (the PersistentVolume's name).
	Name string
	// Spec is the volume's mount spec: its SharedCache, SharedCacheRegion and Region.
	Spec mountspec.Spec
	// Credentials are the tier's (zero: the default chain).
	Credentials objstore.Credentials
	// Limits are the bounds the volume sets (sharedCacheSize,
	// sharedCacheMaxAge).
	Limits tier.Limits
}

// Config tunes a Sweeper; zero values mean the defaults.
type Config struct {
	// PassTimeout bounds a pass over one tier.
	PassTimeout time.Duration
	// MaxDeletes bounds the objects a pass over one tier deletes
	// (tier.DefaultMaxDeletes).
	MaxDeletes int
	// Metrics receives the passes' figures (nil: none).
	Metrics *Metrics
	// Open opens a tier's bucket (tests); nil means backend.Open.
	Open func(context.Context, objstore.Config, objstore.Credentials) (objstore.Store, error)
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Sweeper is the controller's pass over the tiers. Run and Pass must not
// run concurrently.
type Sweeper struct {
	// constant
	cfg Config

	// seen are the tiers of the last pass (their gauges are dropped when
	// no volume names them any more); owned by the running pass.
	seen map[string]bool
}

// New returns a Sweeper.
func New(cfg Config) *Sweeper {
	if cfg.PassTimeout <= 0 {
		cfg.PassTimeout = DefaultPassTimeout
	}
	if cfg.Open == nil {
		cfg.Open = backend.Open
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Sweeper{cfg: cfg, seen: map[string]bool{}}
}

// Run sweeps the tiers of the volumes list returns now and every interval
// until ctx ends. Failures are logged; the next pass tries again.
func (s *Sweeper) Run(ctx context.Context, interval time.Duration, list func(context.Context) ([]Volume, error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		vols, err := list(ctx)
		if err != nil {
			klog.ErrorS(err, "listing volumes for the shared cache tiers' sweep")
		}
		if err := s.Pass(ctx, vols); err != nil {
			klog.ErrorS(err, "sweeping the shared cache tiers; trying again at the next pass", "interval", interval)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// bounded is one tier and what a pass needs of it.
type bounded struct {
	url    string
	first  Volume // its credentials and region are the pass's
	limits tier.Limits
	names  []string
}

// tiers groups vols by tier, leaving out those without bounds, in URL
// order.
func tiers(vols []Volume) []*bounded {
	vols = slices.Clone(vols)
	slices.SortFunc(vols, func(a, b Volume) int { return cmp.Compare(a.Name, b.Name) })
	byURL := map[string]*bounded{}
	var out []*bounded
	for _, v := range vols {
		if v.Spec.SharedCache == "" || v.Limits.IsZero() {
			continue
		}
		b := byURL[v.Spec.SharedCache]
		if b == nil {
			b = &bounded{url: v.Spec.SharedCache, first: v}
			byURL[b.url] = b
			out = append(out, b)
		}
		b.limits = b.limits.Tighter(v.Limits)
		b.names = append(b.names, v.Name)
	}
	slices.SortFunc(out, func(a, b *bounded) int { return cmp.Compare(a.url, b.url) })
	return out
}

// Pass sweeps the tier of every bounded volume once, one tier after
// another, and returns the tiers' errors joined.
func (s *Sweeper) Pass(ctx context.Context, vols []Volume) error {
	var errs []error
	seen := map[string]bool{}
	for _, b := range tiers(vols) {
		seen[b.url] = true
		if ctx.Err() != nil {
			break
		}
		res, err := s.sweep(ctx, b)
		s.cfg.Metrics.Pass(b.url, res, err, float64(s.cfg.Now().Unix()))
		log := []any{"sharedCache", b.url, "volumes", len(b.names), "objects", res.Objects, "bytes", res.Bytes,
			"expired", res.Expired, "overBudget", res.OverBudget, "evictedBytes", res.EvictedBytes}
		if res.Foreign > 0 {
			log = append(log, "notTierObjects", res.Foreign)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("shared cache tier %s (volume %s): %w", b.url, b.first.Name, err))
			klog.ErrorS(err, "sweeping a shared cache tier", log...)
			continue
		}
		klog.V(2).InfoS("swept a shared cache tier", log...)
	}
	for url := range s.seen {
		if !seen[url] {
			s.cfg.Metrics.Forget(url)
		}
	}
	s.seen = seen
	return errors.Join(errs...)
}

// sweep runs one pass over b's tier.
func (s *Sweeper) sweep(ctx context.Context, b *bounded) (tier.EvictResult, error) {
	cfg, prefix, ok := b.first.Spec.SharedCacheConfig()
	if !ok {
		return tier.EvictResult{}, fmt.Errorf("tiersweep: volume %s: sharedCache %q is not a tier URL", b.first.Name, b.url)
	}
	cfg.RequestTimeout, cfg.MaxAttempts = RequestTimeout, MaxAttempts
	ctx, cancel := context.WithTimeout(ctx, s.cfg.PassTimeout)
	defer cancel()
	st, err := s.cfg.Open(ctx, cfg, b.first.Credentials)
	if err != nil {
		return tier.EvictResult{}, err
	}
	st = objstore.WithPrefix(st, prefix)
	defer func() { _ = st.Close() }()
	return tier.Evict(ctx, st, tier.EvictOptions{Limits: b.limits, MaxDeletes: s.cfg.MaxDeletes, Now: s.cfg.Now})
}

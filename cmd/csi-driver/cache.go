package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/basin-csi/basin/internal/cacheusage"
	"github.com/basin-csi/basin/pkg/admin"
	"github.com/basin-csi/basin/pkg/cache"
	"github.com/basin-csi/basin/pkg/driver"
	"github.com/basin-csi/basin/pkg/mountspec"
)

// `csi-driver cache stats|ls|verify|gc`: the caches of a node, whether a
// FUSE process serves them (asked over its admin socket) or not (read
// offline). Output formats are in cache_format.go.

// cacheConfig is the parsed command line of `csi-driver cache`.
type cacheConfig struct {
	action string // stats, ls, verify, gc
	root   string
	volume string // "" for every volume
	json   bool
	query  admin.EntryQuery
	gc     admin.GCRequest
}

var cacheActions = []string{"stats", "ls", "verify", "gc"}

func cacheFlagSet(c *cacheConfig, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("cache", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.root, "cache-root", driver.DefaultCacheRoot, "`directory` holding one cache directory per volume (the node plugin's --cache-root)")
	fs.StringVar(&c.volume, "volume", "", "only this volume: its cache directory's name or its volume `ID` (default: every volume)")
	fs.BoolVar(&c.json, "json", false, "print JSON instead of tables")
	fs.Func("order", "ls: `oldest` (least recently used first: the next to be evicted) or largest", func(s string) error {
		if s != string(admin.Oldest) && s != string(admin.Largest) {
			return fmt.Errorf("want %s or %s", admin.Oldest, admin.Largest)
		}
		c.query.Order = admin.Order(s)
		return nil
	})
	fs.IntVar(&c.query.Limit, "limit", 20, "ls: at most `N` entries per volume (0: all)")
	fs.StringVar(&c.query.Prefix, "prefix", "", "ls: only keys starting with `PREFIX`")
	fs.Var(optionalSize{&c.gc.TargetBytes}, "target", "gc: evict down to this `size` (default: 85% of the cap)")
	fs.Var(optionalSize{&c.gc.CapacityBytes}, "cache-size", "gc: evict to 85% of this `cap` instead of the volume's own (e.g. after lowering cacheSize)")
	fs.Usage = func() {
		_, _ = fmt.Fprint(out, `Usage: csi-driver cache stats|ls|verify|gc [flags]

Inspects the volume caches of this node; safe while volumes are mounted.
A volume served by a FUSE process is asked over its admin socket
(<cache dir>/admin.sock); an idle one is read from disk (ls, verify and gc
lock an idle cache while they run: staging that volume meanwhile fails and
is retried).

  stats   usage, cap, hit ratio and bucket traffic per volume
  ls      cached objects, least recently used (or largest) first
  verify  check every cached block against its CRC and the index against
          the data files; exits 1 if any volume has problems
  gc      evict least recently used objects now, down to 85% of the cap
          (or --target, or 85% of --cache-size)

Flags:
`)
		fs.PrintDefaults()
	}
	return fs
}

// parseCacheArgs parses `cache ACTION [flags]`.
func parseCacheArgs(args []string, out io.Writer) (cacheConfig, error) {
	c := cacheConfig{gc: admin.GCRequest{TargetBytes: -1}, query: admin.EntryQuery{Order: admin.Oldest}}
	fs := cacheFlagSet(&c, out)
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fs.Usage()
		if len(args) == 0 {
			return c, errors.New("missing action: stats, ls, verify or gc")
		}
		return c, flag.ErrHelp
	}
	c.action = args[0]
	if !slices.Contains(cacheActions, c.action) {
		return c, fmt.Errorf("unknown action %q: want stats, ls, verify or gc", c.action)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return c, nil
}

// optionalSize is a flag holding a byte size written as a Kubernetes
// quantity (as the volume attributes write them); its unset value (-1 or
// 0) is not shown as a default.
type optionalSize struct{ p *int64 }

func (v optionalSize) String() string {
	if v.p == nil || *v.p <= 0 {
		return ""
	}
	return mountspec.FormatSize(*v.p)
}

func (v optionalSize) Set(s string) error {
	n, err := mountspec.ParseSize(s)
	if err != nil {
		return err
	}
	*v.p = n
	return nil
}

// runCache is `csi-driver cache`.
func runCache(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseCacheArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	dirs, err := cacheDirs(cfg.root, cfg.volume)
	if err != nil {
		return err
	}
	results := make([]volumeResult, 0, len(dirs))
	for _, dir := range dirs {
		results = append(results, inspectVolume(ctx, cfg, dir))
	}
	if cfg.json {
		err = writeJSONResults(stdout, results)
	} else {
		err = writeResults(stdout, cfg.action, results)
	}
	if err != nil {
		return err
	}
	return resultsError(cfg.action, results)
}

// cacheDirs lists the cache directories under root, or the one of volume
// (matched by directory name or by the volume ID it published).
func cacheDirs(root, volume string) ([]string, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("cache root: %w", err)
	}
	var out []string
	for _, e := range ents {
		dir := filepath.Join(root, e.Name())
		if !e.IsDir() || !cache.IsCacheDir(dir) {
			continue
		}
		if volume != "" && e.Name() != volume {
			if u, err := cacheusage.Read(dir); err != nil || u.VolumeID != volume {
				continue
			}
		}
		out = append(out, dir)
	}
	sort.Strings(out)
	if volume != "" && len(out) == 0 {
		return nil, fmt.Errorf("no cache of volume %q under %s", volume, root)
	}
	return out, nil
}

// Volume states.
const (
	stateServing = "serving" // a FUSE process answered on the admin socket
	stateIdle    = "idle"    // no process: read from disk
	stateBusy    = "busy"    // locked by a process that does not answer
)

// volumeResult is one volume's answer to the action.
type volumeResult struct {
	Dir      string              `json:"dir"`
	VolumeID string              `json:"volumeID"`
	State    string              `json:"state"`
	Stats    *admin.Stats        `json:"stats,omitempty"`
	Entries  []admin.Entry       `json:"entries,omitempty"`
	Verify   *admin.VerifyReport `json:"verify,omitempty"`
	GC       *admin.GCResult     `json:"gc,omitempty"`
	Error    string              `json:"error,omitempty"`
}

// inspectVolume runs the action on the cache in dir: over its admin
// socket when a process serves it, offline otherwise.
func inspectVolume(ctx context.Context, cfg cacheConfig, dir string) volumeResult {
	r := volumeResult{Dir: filepath.Base(dir), State: stateServing}
	if u, err := cacheusage.Read(dir); err == nil {
		r.VolumeID = u.VolumeID
	}
	cl := admin.NewClient(admin.SocketPath(dir))
	err := runAction(ctx, cfg, cl, &r)
	if !errors.Is(err, admin.ErrNotServing) {
		r.setError(err)
		return r
	}
	if cache.InUse(dir) {
		r.State = stateBusy
		r.setError(fmt.Errorf("a process holds the cache but does not answer on %s", cl.Path()))
		return r
	}
	r.State = stateIdle
	if cfg.action == "stats" {
		// The published usage is all an idle cache can tell; reading it
		// takes no lock.
		u, err := cacheusage.Read(dir)
		if err != nil {
			r.setError(err)
			return r
		}
		r.Stats = &admin.Stats{VolumeID: u.VolumeID, CacheDir: dir, UsedBytes: u.UsedBytes, CapacityBytes: u.Capacity, Objects: u.Objects}
		return r
	}
	off, err := cache.OpenOffline(ctx, dir)
	if errors.Is(err, cache.ErrLocked) {
		r.State = stateBusy
		r.setError(fmt.Errorf("the volume was mounted meanwhile; try again: %w", err))
		return r
	}
	if err != nil {
		r.setError(err)
		return r
	}
	r.VolumeID = off.VolumeID()
	err = runAction(ctx, cfg, admin.ForOffline(off), &r)
	if cerr := off.Close(); err == nil {
		err = cerr
	}
	r.setError(err)
	return r
}

// runAction asks vol for the action's answer and stores it in r.
func runAction(ctx context.Context, cfg cacheConfig, vol admin.Volume, r *volumeResult) error {
	switch cfg.action {
	case "stats":
		s, err := vol.Stats(ctx)
		if err == nil {
			r.Stats, r.VolumeID = &s, s.VolumeID
		}
		return err
	case "ls":
		es, err := vol.Entries(ctx, cfg.query)
		r.Entries = es
		return err
	case "verify":
		rep, err := vol.Verify(ctx)
		if err == nil {
			r.Verify = &rep
		}
		return err
	case "gc":
		res, err := vol.GC(ctx, cfg.gc)
		if err == nil {
			r.GC = &res
		}
		return err
	}
	return fmt.Errorf("unknown action %q", cfg.action)
}

func (r *volumeResult) setError(err error) {
	if err != nil {
		r.Error = err.Error()
	}
}

// resultsError is the command's failure: volumes that could not be
// inspected, and for verify, volumes with problems.
func resultsError(action string, results []volumeResult) error {
	failed, bad := 0, 0
	for _, r := range results {
		if r.Error != "" {
			failed++
		}
		if r.Verify != nil && len(r.Verify.Problems) > 0 {
			bad++
		}
	}
	var errs []error
	if failed > 0 {
		errs = append(errs, fmt.Errorf("%s failed for %d of %d volumes", action, failed, len(results)))
	}
	if bad > 0 {
		errs = append(errs, fmt.Errorf("verify found problems in %d of %d volumes", bad, len(results)))
	}
	return errors.Join(errs...)
}

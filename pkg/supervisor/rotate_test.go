package supervisor_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/supervisor"
	"github.com/basin-csi/basin/pkg/supervisor/supervisortest"
)

// rotationFixture is a Manager over fakes whose processes behave like
// `csi-driver mount` for credentials: each reads its handoff file at start
// and a rotation file superseding it, and re-reads that on SIGHUP and
// acknowledges, unless deaf.
type rotationFixture struct {
	m      *supervisor.Manager
	runner *supervisortest.Runner
	dir    string

	mu    sync.Mutex // guards using, usingTier, deaf
	using map[int]objstore.Credentials
	// usingTier are the shared cache tier credentials of each process.
	usingTier map[int]objstore.Credentials
	deaf      bool
	stopCh    chan struct{}
}

func newRotationFixture(t *testing.T) *rotationFixture {
	t.Helper()
	f := &rotationFixture{runner: &supervisortest.Runner{}, dir: filepath.Join(t.TempDir(), "credentials"),
		using: map[int]objstore.Credentials{}, usingTier: map[int]objstore.Credentials{}, stopCh: make(chan struct{})}
	f.runner.OnStart = f.start
	m, err := supervisor.NewManager(supervisor.Config{
		Binary: "/bin/csi-driver", Runner: f.runner, Kernel: supervisortest.NewKernel(), CredentialsDir: f.dir,
		Env: []string{"PATH=/bin"}, ReadyTimeout: 2 * time.Second, CheckInterval: 20 * time.Millisecond,
		CheckTimeout: 50 * time.Millisecond, StopTimeout: time.Second, MaxHealBackoff: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
	t.Cleanup(func() { close(f.stopCh); m.Close() })
	return f
}

// start plays the child's start: read the handoff file, then a newer
// rotation; then serve SIGHUPs.
func (f *rotationFixture) start(p *supervisortest.Process) error {
	args := p.Spec.Args
	i := slices.Index(args, "--spec-file")
	id := args[slices.Index(args, "--volume-id")+1]
	h, err := mountspec.ReadHandoffFile(args[i+1])
	if err != nil {
		return err
	}
	// The bucket's credentials and the tier's, each with its own files.
	useOne := func(fileID string, base objstore.Credentials, using map[int]objstore.Credentials) error {
		c, gen, ok, err := supervisor.ReadRotation(f.dir, fileID, base)
		if err != nil || !ok {
			return err
		}
		f.mu.Lock()
		using[p.Pid()] = c
		f.mu.Unlock()
		return supervisor.AckRotation(f.dir, fileID, gen, c)
	}
	use := func() error {
		return errors.Join(useOne(id, h.Credentials, f.using),
			useOne(supervisor.SharedCacheRotationID(id), h.SharedCacheCredentials, f.usingTier))
	}
	f.mu.Lock()
	f.using[p.Pid()] = h.Credentials
	f.usingTier[p.Pid()] = h.SharedCacheCredentials
	f.mu.Unlock()
	if err := use(); err != nil {
		return err
	}
	go func() {
		seen := 0
		for {
			select {
			case <-f.stopCh:
				return
			case <-p.Exited():
				return
			case <-time.After(2 * time.Millisecond):
			}
			n := countSignal(p.Signals(), syscall.SIGHUP)
			f.mu.Lock()
			deaf := f.deaf
			f.mu.Unlock()
			if n > seen && !deaf {
				seen = n
				_ = use()
			}
		}
	}()
	return nil
}

func countSignal(sigs []os.Signal, s os.Signal) int {
	n := 0
	for _, x := range sigs {
		if x == s {
			n++
		}
	}
	return n
}

func (f *rotationFixture) credentialsOf(p *supervisortest.Process) objstore.Credentials {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.using[p.Pid()]
}

func (f *rotationFixture) tierCredentialsOf(p *supervisortest.Process) objstore.Credentials {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.usingTier[p.Pid()]
}

var (
	credsA = objstore.Credentials{AccessKeyID: "AKID-A", SecretAccessKey: "secret-of-key-A-0001"}
	credsB = objstore.Credentials{AccessKeyID: "AKID-B", SecretAccessKey: "secret-of-key-B-0002"}
)

func TestUpdateCredentialsSwitchesRunningProcess(t *testing.T) {
	f := newRotationFixture(t)
	req := request()
	req.Credentials = credsA
	if err := f.m.Stage(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	p := f.runner.Last()
	steps := []struct {
		name     string
		creds    objstore.Credentials
		signals  int // SIGHUPs received so far
		wantUsed objstore.Credentials
	}{
		{"same as staged: nothing to do", credsA, 0, credsA},
		{"no secret: nothing to do", objstore.Credentials{}, 0, credsA},
		{"new key", credsB, 1, credsB},
		{"repeated (every republish)", credsB, 1, credsB},
		{"back to the staged key", credsA, 2, credsA},
	}
	for _, st := range steps {
		if err := f.m.UpdateCredentials(t.Context(), req.VolumeID, st.creds); err != nil {
			t.Fatalf("%s: UpdateCredentials: %v", st.name, err)
		}
		if got := countSignal(p.Signals(), syscall.SIGHUP); got != st.signals {
			t.Errorf("%s: %d SIGHUPs, want %d", st.name, got, st.signals)
		}
		if got := f.credentialsOf(p); !got.Equal(st.wantUsed) {
			t.Errorf("%s: process uses %s key %q", st.name, got, got.AccessKeyID)
		}
	}
	if len(f.runner.Started()) != 1 {
		t.Errorf("%d processes started, want 1 (no restart, no remount)", len(f.runner.Started()))
	}
	creds, _ := supervisor.RotationFiles(f.dir, req.VolumeID)
	if st, err := os.Stat(creds); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("rotation file: %v, %v; want mode 0600", st, err)
	}
}

// TestHealUsesRotatedCredentials: a FUSE process started by a heal after a
// rotation gets the handoff file of the staged credentials and switches to
// the rotated ones itself.
func TestHealUsesRotatedCredentials(t *testing.T) {
	f := newRotationFixture(t)
	req := request()
	req.Credentials = credsA
	if err := f.m.Stage(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if err := f.m.UpdateCredentials(t.Context(), req.VolumeID, credsB); err != nil {
		t.Fatal(err)
	}
	first := f.runner.Last()
	first.Exit(errors.New("killed"))
	waitFor(t, "a heal", func() bool { return len(f.runner.Started()) == 2 })
	if got := f.credentialsOf(f.runner.Last()); !got.Equal(credsB) {
		t.Errorf("healed process uses key %q, want the rotated one", got.AccessKeyID)
	}
	// Nothing left to deliver: no signal to the new process.
	if err := f.m.UpdateCredentials(t.Context(), req.VolumeID, credsB); err != nil {
		t.Fatal(err)
	}
	if n := countSignal(f.runner.Last().Signals(), syscall.SIGHUP); n != 0 {
		t.Errorf("healed process got %d SIGHUPs, want 0", n)
	}
}

// TestStaleRotationIgnored: a rotation file left from a staging with other
// credentials does not apply to a new staging, and unstaging with
// ForgetCredentials removes the files.
func TestStaleRotationIgnored(t *testing.T) {
	f := newRotationFixture(t)
	req := request()
	req.Credentials = credsA
	if err := f.m.Stage(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if err := f.m.UpdateCredentials(t.Context(), req.VolumeID, credsB); err != nil {
		t.Fatal(err)
	}
	if err := f.m.Unstage(t.Context(), req.VolumeID, req.StagingPath); err != nil {
		t.Fatal(err)
	}
	// Staged again with a third key, the rotation file (superseding A) is
	// ignored.
	credsC := objstore.Credentials{AccessKeyID: "AKID-C", SecretAccessKey: "secret-of-key-C-0003"}
	req.Credentials = credsC
	if err := f.m.Stage(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if got := f.credentialsOf(f.runner.Last()); !got.Equal(credsC) {
		t.Errorf("new staging uses key %q, want the staged one", got.AccessKeyID)
	}
	if err := f.m.Unstage(t.Context(), req.VolumeID, req.StagingPath); err != nil {
		t.Fatal(err)
	}
	if err := f.m.ForgetCredentials(req.VolumeID); err != nil {
		t.Fatal(err)
	}
	creds, ack := supervisor.RotationFiles(f.dir, req.VolumeID)
	for _, p := range []string{creds, ack} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after ForgetCredentials: %v", p, err)
		}
	}
}

func TestUpdateCredentialsErrors(t *testing.T) {
	f := newRotationFixture(t)
	withKeys := request()
	withKeys.Credentials = credsA
	chain := request()
	chain.VolumeID, chain.StagingPath, chain.CacheDir, chain.Credentials = "s3/chain", "/staging2", "/cache/w", objstore.Credentials{}
	for _, r := range []supervisor.Request{withKeys, chain} {
		if err := f.m.Stage(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		id   string
		ctx  func() (context.Context, context.CancelFunc)
		deaf bool
		want error
	}{
		{"not staged", "s3/other", nil, false, supervisor.ErrNotStaged},
		{"staged on the default chain", chain.VolumeID, nil, false, supervisor.ErrNotRotatable},
		{"process never confirms", withKeys.VolumeID, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 1500*time.Millisecond)
		}, true, supervisor.ErrTimeout},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.mu.Lock()
			f.deaf = c.deaf
			f.mu.Unlock()
			ctx, cancel := context.WithCancel(t.Context())
			if c.ctx != nil {
				ctx, cancel = c.ctx()
			}
			defer cancel()
			err := f.m.UpdateCredentials(ctx, c.id, credsB)
			if !errors.Is(err, c.want) {
				t.Fatalf("UpdateCredentials = %v, want %v", err, c.want)
			}
			if strings.Contains(err.Error(), credsB.SecretAccessKey) || strings.Contains(err.Error(), credsB.AccessKeyID) {
				t.Errorf("error names the credentials: %v", err)
			}
		})
	}
	// The deaf process was asked more than once (SIGHUP is repeated).
	var p *supervisortest.Process
	for _, q := range f.runner.Started() {
		if slices.Contains(q.Spec.Args, withKeys.VolumeID) {
			p = q
		}
	}
	if n := countSignal(p.Signals(), syscall.SIGHUP); n < 2 {
		t.Errorf("%d SIGHUPs to a process that does not answer, want at least 2", n)
	}
}

func TestReadRotationRefusesAnUnsafeFile(t *testing.T) {
	dir := t.TempDir()
	const id = "s3/vol"
	path, _ := supervisor.RotationFiles(dir, id)
	if _, _, ok, err := supervisor.ReadRotation(dir, id, credsA); ok || err != nil {
		t.Fatalf("no rotation file: ok %v, %v; want false, nil", ok, err)
	}
	if err := os.WriteFile(path, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := supervisor.ReadRotation(dir, id, credsA); !errors.Is(err, supervisor.ErrCredentialsFile) {
		t.Errorf("a 0644 rotation file: %v, want ErrCredentialsFile", err)
	}
}

// TestUpdateSharedCacheCredentials: the shared cache tier's credentials
// rotate on their own, through their own files, without a restart; the
// bucket's stay as they are, and rotate on their own too. A process
// started by a heal uses both rotated pairs. A volume staged without tier
// credentials cannot rotate them; ForgetCredentials removes the tier's
// files too.
func TestUpdateSharedCacheCredentials(t *testing.T) {
	f := newRotationFixture(t)
	tierA := objstore.Credentials{AccessKeyID: "TIER-A", SecretAccessKey: "tier-secret-A-0001"}
	tierB := objstore.Credentials{AccessKeyID: "TIER-B", SecretAccessKey: "tier-secret-B-0002"}
	req := request()
	req.Credentials, req.SharedCacheCredentials = credsA, tierA
	if err := f.m.Stage(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	p := f.runner.Last()
	if err := f.m.UpdateSharedCacheCredentials(t.Context(), req.VolumeID, tierA); err != nil {
		t.Fatal(err)
	}
	if n := countSignal(p.Signals(), syscall.SIGHUP); n != 0 {
		t.Errorf("the staged tier key delivered again: %d SIGHUPs, want 0", n)
	}
	if err := f.m.UpdateSharedCacheCredentials(t.Context(), req.VolumeID, tierB); err != nil {
		t.Fatal(err)
	}
	if got, bucket := f.tierCredentialsOf(p), f.credentialsOf(p); !got.Equal(tierB) || !bucket.Equal(credsA) {
		t.Errorf("after the tier's rotation: tier key %q, bucket key %q; want TIER-B, AKID-A", got.AccessKeyID, bucket.AccessKeyID)
	}
	if err := f.m.UpdateCredentials(t.Context(), req.VolumeID, credsB); err != nil {
		t.Fatal(err)
	}
	if got, bucket := f.tierCredentialsOf(p), f.credentialsOf(p); !got.Equal(tierB) || !bucket.Equal(credsB) {
		t.Errorf("after the bucket's rotation: tier key %q, bucket key %q; want TIER-B, AKID-B", got.AccessKeyID, bucket.AccessKeyID)
	}
	if len(f.runner.Started()) != 1 {
		t.Errorf("%d processes started, want 1 (no restart, no remount)", len(f.runner.Started()))
	}
	tierFile, tierAck := supervisor.RotationFiles(f.dir, supervisor.SharedCacheRotationID(req.VolumeID))
	if st, err := os.Stat(tierFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("tier rotation file: %v, %v; want mode 0600", st, err)
	}

	p.Exit(errors.New("killed"))
	waitFor(t, "a heal", func() bool { return len(f.runner.Started()) == 2 })
	healed := f.runner.Last()
	if got, bucket := f.tierCredentialsOf(healed), f.credentialsOf(healed); !got.Equal(tierB) || !bucket.Equal(credsB) {
		t.Errorf("healed process: tier key %q, bucket key %q; want both rotated", got.AccessKeyID, bucket.AccessKeyID)
	}

	noTier := request()
	noTier.VolumeID, noTier.StagingPath, noTier.CacheDir = "s3/no-tier-keys", "/staging3", "/cache/t"
	if err := f.m.Stage(t.Context(), noTier); err != nil {
		t.Fatal(err)
	}
	if err := f.m.UpdateSharedCacheCredentials(t.Context(), noTier.VolumeID, tierB); !errors.Is(err, supervisor.ErrNotRotatable) {
		t.Errorf("tier rotation of a volume staged without tier keys = %v, want ErrNotRotatable", err)
	}
	if err := f.m.Unstage(t.Context(), req.VolumeID, req.StagingPath); err != nil {
		t.Fatal(err)
	}
	if err := f.m.ForgetCredentials(req.VolumeID); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{tierFile, tierAck} {
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after ForgetCredentials: %v", path, err)
		}
	}
}

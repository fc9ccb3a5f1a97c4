// Command warmpath measures the warm path (issue 17): epochs over many
// small files that are all in the node's cache, through one or more Basin
// mounts and through the same tree in a local directory, alternating the
// sides in every round so that the noise of a shared machine falls on all
// of them alike. Each mount serves a file:// bucket (the local tree itself),
// so the only difference between a mount and the local directory is the
// FUSE path. For each phase (warm, after a remount, after drop_caches) it
// prints every round's files/s, the ratio to the local directory in the
// same round, and the FUSE process's CPU time per 10,000 files.
//
// Two binaries side by side give an A/B of a change:
//
//	go build -o /tmp/a/csi-driver ./cmd/csi-driver   # before
//	go build -o /tmp/b/csi-driver ./cmd/csi-driver   # after
//	go run ./bench/cmd/warmpath -bin a=/tmp/a/csi-driver -bin b=/tmp/b/csi-driver
//
// The same binary with different mount flags is an A/B of a setting:
//
//	go run ./bench/cmd/warmpath -bin server=/tmp/b/csi-driver -bin "kernel=/tmp/b/csi-driver --open-mode kernel"
//
// Run it as root (FUSE mounts, drop_caches).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/basin-csi/basin/bench/scenario"
	"github.com/basin-csi/basin/bench/sut"
)

type binFlag []side

func (b *binFlag) String() string { return fmt.Sprint(*b) }
func (b *binFlag) Set(v string) error {
	name, rest, _ := strings.Cut(v, "=")
	words := strings.Fields(rest)
	if name == "" || len(words) == 0 {
		return errors.New("want NAME=PATH [FLAGS]")
	}
	*b = append(*b, side{name: name, bin: words[0], flags: words[1:]})
	return nil
}

type config struct {
	bins        binFlag
	work        string
	files, dirs int
	size        int64
	threads     int
	rounds      int
	phases      []string
	flags       []string
}

// side is one Basin binary under test.
type side struct {
	name, bin string
	flags     []string // csi-driver mount flags of this side only
	mnt       string
	cmd       *exec.Cmd
	exited    chan struct{}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "warmpath:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("warmpath", flag.ContinueOnError)
	fs.Var(&c.bins, "bin", "NAME=PATH of a csi-driver binary, optionally followed by mount flags of this side only (\"kernel=bin/csi-driver --open-mode kernel\"); repeat for an A/B (default: base=bin/csi-driver)")
	fs.StringVar(&c.work, "work", "/var/tmp/basin-warmpath", "work directory: the tree (kept for later runs), mount points, caches")
	fs.IntVar(&c.files, "files", 20000, "number of files")
	fs.IntVar(&c.dirs, "dirs", 100, "directories the files are spread over")
	fs.Int64Var(&c.size, "size", 128<<10, "file size, bytes")
	fs.IntVar(&c.threads, "threads", 8, "reader threads")
	fs.IntVar(&c.rounds, "rounds", 3, "rounds per phase; each reads every side once")
	phases := fs.String("phases", "warm,remount,drop", "phases: warm, remount (each mount remounted before its epoch), drop (drop_caches before each epoch)")
	flags := fs.String("flags", "", "extra flags for csi-driver mount, space-separated")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if len(c.bins) == 0 {
		c.bins = binFlag{{name: "base", bin: "bin/csi-driver"}}
	}
	c.phases = strings.Split(*phases, ",")
	c.flags = strings.Fields(*flags)
	return c, nil
}

func run(ctx context.Context, args []string) error {
	c, err := parseFlags(args)
	if err != nil {
		return err
	}
	tree := filepath.Join(c.work, "tree")
	if err := makeTree(tree, c.files, c.dirs, c.size); err != nil {
		return err
	}
	paths, err := listTree(tree)
	if err != nil {
		return err
	}
	sides := c.bins
	for i := range sides {
		s := &sides[i]
		if s.bin, err = filepath.Abs(s.bin); err != nil {
			return err
		}
		s.mnt = filepath.Join(c.work, "mnt-"+s.name)
		cache := filepath.Join(c.work, "cache-"+s.name)
		_ = syscall.Unmount(s.mnt, syscall.MNT_DETACH)
		if err := os.RemoveAll(cache); err != nil {
			return err
		}
		if err := os.MkdirAll(s.mnt, 0o755); err != nil {
			return err
		}
		if err := s.mount(ctx, c, tree, cache); err != nil {
			return err
		}
		defer s.unmount()
		// Cold pass: fills the cache.
		m, err := scenario.ReadFiles(ctx, rebase(paths, tree, s.mnt), c.threads)
		if err != nil {
			return fmt.Errorf("%s: cold pass: %w", s.name, err)
		}
		fmt.Printf("%s cold: %.0f files/s\n", s.name, m.FilesPerSec())
	}
	for _, phase := range c.phases {
		if err := runPhase(ctx, c, phase, sides, tree, paths); err != nil {
			return err
		}
	}
	return nil
}

// runPhase plays rounds of one phase: each round every side once (order
// rotating), then the local tree.
func runPhase(ctx context.Context, c config, phase string, sides []side, tree string, paths []string) error {
	type result struct {
		fps    []float64
		ratios []float64
		cpu10k []float64 // ms of FUSE-process CPU per 10,000 files
	}
	res := make([]result, len(sides))
	var local []float64
	for round := range c.rounds {
		order := shuffled(paths, uint64(round)+uint64(len(phase))<<8)
		var localFPS float64
		// Local first on even rounds, last on odd ones.
		epochLocal := func() error {
			if phase == "drop" {
				if err := scenario.DropCaches(); err != nil {
					return err
				}
			}
			m, err := scenario.ReadFiles(ctx, order, c.threads)
			if err != nil {
				return err
			}
			localFPS = m.FilesPerSec()
			return nil
		}
		if round%2 == 0 {
			if err := epochLocal(); err != nil {
				return err
			}
		}
		fpsRound := make([]float64, len(sides))
		for k := range sides {
			i := (k + round) % len(sides)
			s := &sides[i]
			switch phase {
			case "remount":
				s.unmount()
				if err := s.mount(ctx, c, tree, filepath.Join(c.work, "cache-"+s.name)); err != nil {
					return err
				}
			case "drop":
				if err := scenario.DropCaches(); err != nil {
					return err
				}
			}
			before, err := sut.ProcessCPU(s.cmd.Process.Pid)
			if err != nil {
				return err
			}
			m, err := scenario.ReadFiles(ctx, rebase(order, tree, s.mnt), c.threads)
			if err != nil {
				return fmt.Errorf("%s %s: %w", s.name, phase, err)
			}
			after, err := sut.ProcessCPU(s.cmd.Process.Pid)
			if err != nil {
				return err
			}
			fpsRound[i] = m.FilesPerSec()
			res[i].cpu10k = append(res[i].cpu10k, float64((after-before).Milliseconds())*10000/float64(m.Files))
		}
		if round%2 == 1 {
			if err := epochLocal(); err != nil {
				return err
			}
		}
		local = append(local, localFPS)
		line := fmt.Sprintf("%-8s round %d: local %6.0f", phase, round+1, localFPS)
		for i, s := range sides {
			res[i].fps = append(res[i].fps, fpsRound[i])
			res[i].ratios = append(res[i].ratios, fpsRound[i]/localFPS)
			line += fmt.Sprintf("  %s %6.0f (%.3f×, %4.0f ms CPU/10k)", s.name, fpsRound[i], fpsRound[i]/localFPS, res[i].cpu10k[round])
		}
		fmt.Println(line)
	}
	line := fmt.Sprintf("%-8s median:  local %6.0f", phase, median(local))
	for i, s := range sides {
		line += fmt.Sprintf("  %s %6.0f (%.3f×, %4.0f ms CPU/10k)", s.name, median(res[i].fps), median(res[i].ratios), median(res[i].cpu10k))
	}
	fmt.Println(line)
	if len(sides) == 2 {
		var ab []float64
		for r := range res[0].fps {
			ab = append(ab, res[1].fps[r]/res[0].fps[r])
		}
		fmt.Printf("%-8s %s÷%s per round: %s (median %.3f); CPU/10k %s÷%s median %.3f\n", phase, sides[1].name, sides[0].name,
			fmtList(ab), median(ab), sides[1].name, sides[0].name, median(res[1].cpu10k)/median(res[0].cpu10k))
	}
	return nil
}

func (s *side) mount(ctx context.Context, c config, tree, cache string) error {
	args := append([]string{"mount", "--cache-dir", cache, "--cache-size", "100Gi",
		"--metadata-ttl", "-1", "--negative-metadata-ttl", "5m", "--read-only"}, c.flags...)
	args = append(args, s.flags...)
	args = append(args, "file://"+tree, s.mnt)
	cmd := exec.Command(s.bin, args...)
	log, err := os.OpenFile(filepath.Join(c.work, s.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return err
	}
	s.cmd = cmd
	s.exited = make(chan struct{})
	go func() { _ = cmd.Wait(); _ = log.Close(); close(s.exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if fuseMounted(s.mnt) {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("%s: mount exited: see %s", s.name, log.Name())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s: not mounted after 30s", s.name)
}

func (s *side) unmount() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	_ = syscall.Unmount(s.mnt, syscall.MNT_DETACH)
	s.cmd = nil
}

func fuseMounted(dir string) bool {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && fields[4] == dir {
			return slices.ContainsFunc(fields, func(s string) bool { return strings.HasPrefix(s, "fuse") })
		}
	}
	return false
}

// makeTree writes files × size bytes of random data over dirs
// directories, unless a tree of that shape is there already.
func makeTree(root string, files, dirs int, size int64) error {
	stamp := filepath.Join(root, ".shape")
	shape := fmt.Sprintf("%d %d %d\n", files, dirs, size)
	if b, err := os.ReadFile(stamp); err == nil && string(b) == shape {
		return nil
	}
	if err := os.RemoveAll(root); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, size)
	for i := range files {
		dir := filepath.Join(root, fmt.Sprintf("d%03d", i%dirs))
		if i < dirs {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		for j := 0; j+8 <= len(buf); j += 8 {
			v := rng.Uint64()
			for k := range 8 {
				buf[j+k] = byte(v >> (8 * k))
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%06d.bin", i)), buf, 0o644); err != nil {
			return err
		}
	}
	// The stamp is seen through the mounts too; listTree skips it.
	return os.WriteFile(stamp, []byte(shape), 0o644)
}

func listTree(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() != ".shape" {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

func rebase(paths []string, from, to string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = to + strings.TrimPrefix(p, from)
	}
	return out
}

func shuffled(paths []string, seed uint64) []string { return scenario.Shuffled(paths, seed) }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fmtList(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(parts, " ")
}

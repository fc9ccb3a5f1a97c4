package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/basin-csi/basin/internal/atomicfile"
	"github.com/basin-csi/basin/internal/owned"
	"github.com/basin-csi/basin/pkg/mountspec"
	"github.com/basin-csi/basin/pkg/objstore"
)

// Credential rotation: how new credentials reach a running FUSE process
// without a remount.
//
// A FUSE process gets its credentials at start from its hand-off file,
// which it deletes (mountspec.WriteHandoffFile). When a volume's secret changes, the
// Manager writes the new credentials to the volume's rotation file in
// Config.CredentialsDir (0600, atomically, named by a hash of the volume
// ID) and sends the process SIGHUP; the process reads the file, switches
// its store (objstore.CredentialsUpdater) and writes the file's generation
// and a digest of the credentials to the volume's ack file. UpdateCredentials returns once the ack shows
// the generation.
//
// The rotation file stays while the volume is staged: a FUSE process
// started later for the same volume (a heal) starts from the Request's
// credentials and finds the newer ones there. So that a file left from an
// earlier staging with other credentials is never used, it names the
// credentials it supersedes (a SHA-256 of the Request's credentials); a
// process whose start credentials do not match ignores it.
// ForgetCredentials removes both files when the volume is unstaged.
//
// The shared cache tier's credentials (Request.SharedCacheCredentials)
// rotate the same way, through files of their own: those of
// SharedCacheRotationID(volumeID), superseding the tier credentials the
// volume was staged with (UpdateSharedCacheCredentials). One SIGHUP makes
// the process reload both.

// ErrNotRotatable: the volume was staged without credentials (the backend's
// default chain); its FUSE process has no credentials to take new
// ones from, and picks up a secret only at its next stage.
var ErrNotRotatable = errors.New("supervisor: volume staged without credentials cannot switch to new ones")

// maxCredentialsFile bounds what ReadRotation reads.
const maxCredentialsFile = 1 << 20

// rotationTimeout bounds UpdateCredentials when ctx has no earlier
// deadline; resendInterval is how often SIGHUP is repeated while waiting
// (a process that was just replaced by a heal may have missed it).
const (
	rotationTimeout = 30 * time.Second
	resendInterval  = time.Second
	ackPollInterval = 20 * time.Millisecond
)

// rotationJSON is the rotation file's format.
type rotationJSON struct {
	// Supersedes is credentialsDigest of the credentials the volume was
	// staged with.
	Supersedes string `json:"supersedes"`
	// Generation counts the rotations since the volume was staged (>= 1).
	Generation  uint64                    `json:"generation"`
	Credentials mountspec.CredentialsJSON `json:"credentials"`
}

// SharedCacheRotationID is the ID whose rotation files (RotationFiles,
// ReadRotation, AckRotation) carry a volume's shared cache tier
// credentials: a NUL never occurs in a volume ID.
func SharedCacheRotationID(volumeID string) string { return volumeID + "\x00sharedCache" }

// RotationFiles returns the rotation and ack file paths of a volume in the
// credentials directory dir.
func RotationFiles(dir, volumeID string) (creds, ack string) {
	sum := sha256.Sum256([]byte(volumeID))
	base := filepath.Join(dir, "rotate-"+hex.EncodeToString(sum[:12]))
	return base + ".json", base + ".ack"
}

// credentialsDigest identifies c without revealing it.
func credentialsDigest(c objstore.Credentials) string {
	b, _ := json.Marshal(mountspec.EncodeCredentials(c)) // a struct of strings: cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ReadRotation returns the credentials in a volume's rotation file in dir
// and their generation, if the file exists and supersedes base (the
// credentials the volume was staged with); ok is false otherwise. The
// file stays. Errors (ErrCredentialsFile for an unsafe file) never quote
// its content.
func ReadRotation(dir, volumeID string, base objstore.Credentials) (c objstore.Credentials, generation uint64, ok bool, err error) {
	path, _ := RotationFiles(dir, volumeID)
	r, found, err := readRotationFile(path)
	if err != nil || !found || r.Supersedes != credentialsDigest(base) {
		return objstore.Credentials{}, 0, false, err
	}
	return r.Credentials.Credentials(), r.Generation, true, nil
}

// readRotationFile reads path; found is false when it does not exist.
func readRotationFile(path string) (r rotationJSON, found bool, err error) {
	b, err := owned.ReadFile(path, maxCredentialsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return rotationJSON{}, false, nil
	}
	if err != nil {
		return rotationJSON{}, false, credentialsFileError("rotation file", err)
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Generation == 0 || r.Supersedes == "" {
		// Never quote the decoder's error: it may show part of a value.
		return rotationJSON{}, false, fmt.Errorf("%w: %s is not a rotation file", ErrCredentialsFile, path)
	}
	return r, true, nil
}

// AckRotation records that the volume's FUSE process now uses c, the
// credentials of the given generation of its rotation file.
func AckRotation(dir, volumeID string, generation uint64, c objstore.Credentials) error {
	_, ack := RotationFiles(dir, volumeID)
	return writeAtomic(dir, ack, []byte(ackLine(generation, c)))
}

// ackLine is the content of an ack file: the generation and the digest of
// the credentials in use.
func ackLine(generation uint64, c objstore.Credentials) string {
	return strconv.FormatUint(generation, 10) + " " + credentialsDigest(c) + "\n"
}

// acked reports whether the ack file at path confirms generation and c.
func acked(path string, generation uint64, c objstore.Credentials) bool {
	b, err := os.ReadFile(path)
	return err == nil && string(b) == ackLine(generation, c)
}

// writeAtomic replaces path (in dir, a 0700 directory of ours, created if
// missing) with a 0600 file holding b, durably (atomicfile).
func writeAtomic(dir, path string, b []byte) error {
	if err := owned.EnsureDir(dir); err != nil {
		return credentialsFileError("credentials directory", err)
	}
	if err := atomicfile.WriteFile(path, b, 0o600, atomicfile.Durable); err != nil {
		return fmt.Errorf("supervisor: %w", err)
	}
	return nil
}

// credentialsFileError wraps an error of package owned: ErrCredentialsFile
// when it refused a file or directory.
func credentialsFileError(what string, err error) error {
	if errors.Is(err, owned.ErrUnsafe) {
		return fmt.Errorf("%w: %w", ErrCredentialsFile, err)
	}
	return fmt.Errorf("supervisor: %s: %w", what, err)
}

// UpdateCredentials makes a staged volume's running FUSE process use c,
// without a remount, and returns once it confirmed (or ctx ended, bounded
// by 30 s: ErrTimeout). Credentials equal to the ones in use cost two
// small file reads and nothing else, so callers may call it on every
// NodePublishVolume. Zero c is a no-op: it means "no secret given", not
// "go back to the default chain". A volume staged without credentials
// fails with ErrNotRotatable, one not staged with ErrNotStaged.
//
// FUSE processes started later for the volume (heals) use c too. Neither
// c nor any part of it appears in an error or a log line.
func (m *Manager) UpdateCredentials(ctx context.Context, volumeID string, c objstore.Credentials) error {
	return m.updateCredentials(ctx, volumeID, volumeID, func(r Request) objstore.Credentials { return r.Credentials }, c)
}

// UpdateSharedCacheCredentials is UpdateCredentials for the credentials of
// the volume's shared cache tier: the running process switches its tier
// client to c, without a remount. A volume staged without tier
// credentials fails with ErrNotRotatable.
func (m *Manager) UpdateSharedCacheCredentials(ctx context.Context, volumeID string, c objstore.Credentials) error {
	return m.updateCredentials(ctx, volumeID, SharedCacheRotationID(volumeID),
		func(r Request) objstore.Credentials { return r.SharedCacheCredentials }, c)
}

// updateCredentials delivers c through the rotation files of fileID,
// superseding the credentials staged picks from the volume's Request.
func (m *Manager) updateCredentials(ctx context.Context, volumeID, fileID string, staged func(Request) objstore.Credentials, c objstore.Credentials) error {
	if c.IsZero() {
		return nil
	}
	unlock := m.opLocks.Lock(volumeID)
	defer unlock()
	m.mu.Lock()
	v := m.vols[volumeID]
	m.mu.Unlock()
	if v == nil {
		return fmt.Errorf("%w: %s", ErrNotStaged, volumeID)
	}
	base := staged(v.req)
	if base.IsZero() {
		return fmt.Errorf("%w: %s", ErrNotRotatable, volumeID)
	}
	dir := m.cfg.CredentialsDir
	path, ackPath := RotationFiles(dir, fileID)
	cur, gen, ok, err := ReadRotation(dir, fileID, base)
	if err != nil {
		return err
	}
	if !ok {
		cur, gen = base, 0
	}
	if !cur.Equal(c) {
		gen++
		b, err := json.Marshal(rotationJSON{Supersedes: credentialsDigest(base), Generation: gen, Credentials: mountspec.EncodeCredentials(c)})
		if err != nil {
			return fmt.Errorf("supervisor: encode rotation file: %w", err)
		}
		// An ack left from an earlier staging must not pass for this one.
		if err := os.Remove(ackPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("supervisor: %w", err)
		}
		if err := writeAtomic(dir, path, b); err != nil {
			return err
		}
		klog.InfoS("delivering new credentials to the FUSE process", "volume", volumeID, "sharedCache", fileID != volumeID, "generation", gen)
	}
	if gen == 0 || acked(ackPath, gen, c) {
		return nil // the process started with c, or already switched to it
	}
	ctx, cancel := context.WithTimeout(ctx, rotationTimeout)
	defer cancel()
	poll := time.NewTicker(ackPollInterval)
	defer poll.Stop()
	var lastSignal time.Time
	for {
		if time.Since(lastSignal) >= resendInterval {
			v.mu.Lock()
			ch := v.child
			v.mu.Unlock()
			// No child: a heal is under way, and the process it starts
			// reads the rotation file itself.
			if ch != nil {
				if err := ch.proc.Signal(syscall.SIGHUP); err != nil {
					klog.V(2).InfoS("signalling the FUSE process", "volume", volumeID, "pid", ch.proc.Pid(), "err", err)
				}
			}
			lastSignal = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: volume %s: the FUSE process did not confirm credentials generation %d (shared cache tier: %v): %w", ErrTimeout, volumeID, gen, fileID != volumeID, ctx.Err())
		case <-poll.C:
		}
		if acked(ackPath, gen, c) {
			klog.InfoS("FUSE process switched to new credentials", "volume", volumeID, "sharedCache", fileID != volumeID, "generation", gen)
			return nil
		}
	}
}

// ForgetCredentials removes a volume's rotation and ack files (the
// tier's too); call it
// when the volume is unstaged (or its stage failed). Missing files are
// not an error.
func (m *Manager) ForgetCredentials(volumeID string) error {
	var errs []error
	creds, ack := RotationFiles(m.cfg.CredentialsDir, volumeID)
	tierCreds, tierAck := RotationFiles(m.cfg.CredentialsDir, SharedCacheRotationID(volumeID))
	for _, p := range []string{creds, ack, tierCreds, tierAck} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("supervisor: remove %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

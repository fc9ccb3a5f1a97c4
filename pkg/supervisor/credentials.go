package supervisor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/basin-csi/basin/pkg/objstore"
)

// credentialsJSON is the file format of a credentials handoff.
type credentialsJSON struct {
	AccessKeyID        string `json:"accessKeyID,omitempty"`
	SecretAccessKey    string `json:"secretAccessKey,omitempty"`
	SessionToken       string `json:"sessionToken,omitempty"`
	GCSCredentialsJSON string `json:"gcsCredentialsJSON,omitempty"`
}

// maxCredentialsFile bounds what ReadCredentialsFile reads.
const maxCredentialsFile = 1 << 20

// WriteCredentialsFile writes c as JSON to a new 0600 file in dir (created
// 0700 if missing; an existing dir must be 0700 and ours) and returns its
// path. The reader deletes it (ReadCredentialsFile).
func WriteCredentialsFile(dir string, c objstore.Credentials) (path string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("supervisor: credentials directory: %w", err)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("supervisor: credentials directory: %w", err)
	}
	if err := checkOwned(st, os.ModeDir|0o700); err != nil {
		return "", fmt.Errorf("%w: directory %s: %w", ErrCredentialsFile, dir, err)
	}
	b, err := json.Marshal(credentialsJSON{
		AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey,
		SessionToken: c.SessionToken, GCSCredentialsJSON: string(c.GCSCredentialsJSON),
	})
	if err != nil {
		return "", fmt.Errorf("supervisor: encode credentials: %w", err)
	}
	f, err := os.CreateTemp(dir, "credentials-*.json") // 0600
	if err != nil {
		return "", fmt.Errorf("supervisor: credentials file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(b); err != nil {
		return "", fmt.Errorf("supervisor: write credentials file: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("supervisor: write credentials file: %w", err)
	}
	return f.Name(), nil
}

// ReadCredentialsFile reads a file written by WriteCredentialsFile and
// removes it, so the secret stays on disk only while a child starts. It
// refuses (ErrCredentialsFile) anything but a regular 0600 file owned by
// the calling user, and removes even a refused file.
func ReadCredentialsFile(path string) (objstore.Credentials, error) {
	f, err := os.OpenFile(filepath.Clean(path), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return objstore.Credentials{}, fmt.Errorf("supervisor: credentials file: %w", err)
	}
	defer func() { _ = f.Close() }()
	rmErr := os.Remove(path)
	st, err := f.Stat()
	if err != nil {
		return objstore.Credentials{}, fmt.Errorf("supervisor: credentials file: %w", err)
	}
	if err := checkOwned(st, 0o600); err != nil {
		return objstore.Credentials{}, fmt.Errorf("%w: %s: %w", ErrCredentialsFile, path, err)
	}
	if rmErr != nil {
		return objstore.Credentials{}, fmt.Errorf("supervisor: remove credentials file: %w", rmErr)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxCredentialsFile+1))
	if err != nil {
		return objstore.Credentials{}, fmt.Errorf("supervisor: read credentials file: %w", err)
	}
	if len(b) > maxCredentialsFile {
		return objstore.Credentials{}, fmt.Errorf("%w: %s is larger than %d bytes", ErrCredentialsFile, path, maxCredentialsFile)
	}
	var cj credentialsJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cj); err != nil {
		// The decoder's messages name fields, never values.
		return objstore.Credentials{}, fmt.Errorf("%w: %s is not a credentials file: %w", ErrCredentialsFile, path, err)
	}
	c := objstore.Credentials{AccessKeyID: cj.AccessKeyID, SecretAccessKey: cj.SecretAccessKey, SessionToken: cj.SessionToken}
	if cj.GCSCredentialsJSON != "" {
		c.GCSCredentialsJSON = []byte(cj.GCSCredentialsJSON)
	}
	return c, nil
}

// checkOwned reports why st is not of exactly mode (type and permission
// bits) and owned by the calling user.
func checkOwned(st os.FileInfo, mode os.FileMode) error {
	if st.Mode() != mode {
		return fmt.Errorf("mode %v, want %v", st.Mode(), mode)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return errors.New("no owner information")
	}
	if int(sys.Uid) != os.Geteuid() {
		return fmt.Errorf("owned by uid %d, not %d", sys.Uid, os.Geteuid())
	}
	return nil
}

package nodestate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/basin-csi/basin/internal/atomicfile"
	"github.com/basin-csi/basin/pkg/objstore"
)

// credentialsJSON is the on-disk form of a volume's credentials.
type credentialsJSON struct {
	AccessKeyID        string `json:"accessKeyID,omitempty"`
	SecretAccessKey    string `json:"secretAccessKey,omitempty"`
	SessionToken       string `json:"sessionToken,omitempty"`
	GCSCredentialsJSON string `json:"gcsCredentialsJSON,omitempty"`
}

// credentialsPath is the file of a volume's credentials: a hash of the ID
// (volume IDs hold '/').
func (s *Store) credentialsPath(id string) string {
	sum := sha256.Sum256([]byte(id))
	return filepath.Join(filepath.Dir(s.path), "credentials", hex.EncodeToString(sum[:16])+".json")
}

// SaveCredentials keeps a volume's credentials (0600 file, 0700
// directory, written atomically). Zero credentials remove the file.
func (s *Store) SaveCredentials(id string, c objstore.Credentials) error {
	path := s.credentialsPath(id)
	if c.IsZero() {
		return s.DeleteCredentials(id)
	}
	b, err := json.Marshal(credentialsJSON{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey,
		SessionToken: c.SessionToken, GCSCredentialsJSON: string(c.GCSCredentialsJSON)})
	if err != nil {
		return fmt.Errorf("nodestate: encode credentials: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("nodestate: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("nodestate: %w", err)
	}
	if err := atomicfile.WriteFile(path, b, 0o600, atomicfile.Durable); err != nil {
		return fmt.Errorf("nodestate: save credentials: %w", err)
	}
	return nil
}

// LoadCredentials returns a volume's saved credentials; none saved is the
// zero Credentials (the default chain).
func (s *Store) LoadCredentials(id string) (objstore.Credentials, error) {
	b, err := os.ReadFile(s.credentialsPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return objstore.Credentials{}, nil
	}
	if err != nil {
		return objstore.Credentials{}, fmt.Errorf("nodestate: load credentials: %w", err)
	}
	var cj credentialsJSON
	if err := json.Unmarshal(b, &cj); err != nil {
		return objstore.Credentials{}, fmt.Errorf("%w: credentials of %s do not decode", ErrCorrupt, id)
	}
	c := objstore.Credentials{AccessKeyID: cj.AccessKeyID, SecretAccessKey: cj.SecretAccessKey, SessionToken: cj.SessionToken}
	if cj.GCSCredentialsJSON != "" {
		c.GCSCredentialsJSON = []byte(cj.GCSCredentialsJSON)
	}
	return c, nil
}

// DeleteCredentials removes a volume's credentials; none is success.
func (s *Store) DeleteCredentials(id string) error {
	if err := os.Remove(s.credentialsPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("nodestate: delete credentials: %w", err)
	}
	return nil
}

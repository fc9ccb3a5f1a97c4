package mountspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/basin-csi/basin/internal/owned"
	"github.com/basin-csi/basin/pkg/objstore"
)

// ErrHandoffFile: a hand-off file is not what WriteHandoffFile makes
// (mode, owner, type, size, format).
var ErrHandoffFile = errors.New("mountspec: unsafe or malformed hand-off file")

// Handoff is what the node plugin hands a mount process: the Spec, the
// store's credentials and the shared cache tier's (zero: the default
// chain).
type Handoff struct {
	Spec                   Spec
	Credentials            objstore.Credentials
	SharedCacheCredentials objstore.Credentials
}

// handoffJSON is the file format.
type handoffJSON struct {
	Spec                   json.RawMessage `json:"spec"`
	Credentials            CredentialsJSON `json:"credentials"`
	SharedCacheCredentials CredentialsJSON `json:"sharedCacheCredentials,omitzero"`
}

// CredentialsJSON is the JSON form of objstore.Credentials in the files
// that carry them to a mount process: the hand-off file and the
// supervisor's rotation file. Its fields are secret; String redacts them.
type CredentialsJSON struct {
	AccessKeyID        string `json:"accessKeyID,omitempty"`
	SecretAccessKey    string `json:"secretAccessKey,omitempty"`
	SessionToken       string `json:"sessionToken,omitempty"`
	GCSCredentialsJSON string `json:"gcsCredentialsJSON,omitempty"`
}

// EncodeCredentials returns the JSON form of c.
func EncodeCredentials(c objstore.Credentials) CredentialsJSON {
	return CredentialsJSON{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey,
		SessionToken: c.SessionToken, GCSCredentialsJSON: string(c.GCSCredentialsJSON)}
}

// Credentials returns the credentials cj holds.
func (cj CredentialsJSON) Credentials() objstore.Credentials {
	c := objstore.Credentials{AccessKeyID: cj.AccessKeyID, SecretAccessKey: cj.SecretAccessKey, SessionToken: cj.SessionToken}
	if cj.GCSCredentialsJSON != "" {
		c.GCSCredentialsJSON = []byte(cj.GCSCredentialsJSON)
	}
	return c
}

// String redacts the credentials (objstore.Credentials.String).
func (cj CredentialsJSON) String() string { return cj.Credentials().String() }

// GoString redacts the credentials too.
func (cj CredentialsJSON) GoString() string { return cj.String() }

// maxHandoffFile bounds what ReadHandoffFile reads.
const maxHandoffFile = 1 << 20

// WriteHandoffFile writes h to a new 0600 file in dir (created 0700 if
// missing; an existing dir must be 0700 and ours) and returns its path.
// The reader deletes it (ReadHandoffFile).
func WriteHandoffFile(dir string, h Handoff) (path string, err error) {
	if err := h.Spec.Validate(); err != nil {
		return "", err
	}
	if err := owned.EnsureDir(dir); err != nil {
		return "", handoffError("hand-off directory", err)
	}
	spec, err := json.Marshal(h.Spec)
	if err != nil {
		return "", fmt.Errorf("mountspec: encode spec: %w", err)
	}
	b, err := json.Marshal(handoffJSON{Spec: spec, Credentials: EncodeCredentials(h.Credentials),
		SharedCacheCredentials: EncodeCredentials(h.SharedCacheCredentials)})
	if err != nil {
		return "", errors.New("mountspec: encode hand-off file") // never quote a credential
	}
	f, err := os.CreateTemp(dir, "mount-*.json") // 0600
	if err != nil {
		return "", fmt.Errorf("mountspec: hand-off file: %w", err)
	}
	defer func() {
		if err != nil { // the write's error is the one to report
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	// No fsync: the file lives only while a child starts; after a crash
	// the next start writes a new one.
	if _, err := f.Write(b); err != nil {
		return "", fmt.Errorf("mountspec: write hand-off file: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("mountspec: write hand-off file: %w", err)
	}
	return f.Name(), nil
}

// ReadHandoffFile reads a file written by WriteHandoffFile and removes it,
// so the secret stays on disk only while a mount process starts. It
// refuses (ErrHandoffFile) anything but a regular 0600 file owned by the
// calling user, and removes even a refused file. A Spec of another
// version fails with ErrVersion, an invalid one with ErrInvalid. Errors
// never quote the file's content.
func ReadHandoffFile(path string) (Handoff, error) {
	b, err := owned.TakeFile(path, maxHandoffFile)
	if err != nil {
		return Handoff{}, handoffError("hand-off file", err)
	}
	var hj handoffJSON
	if err := strictDecode(b, &hj); err != nil {
		return Handoff{}, fmt.Errorf("%w: %s: %w", ErrHandoffFile, path, redactJSONError(err))
	}
	spec, err := DecodeSpec(hj.Spec)
	if err != nil {
		return Handoff{}, fmt.Errorf("%s: %w", path, err)
	}
	return Handoff{Spec: spec, Credentials: hj.Credentials.Credentials(),
		SharedCacheCredentials: hj.SharedCacheCredentials.Credentials()}, nil
}

// handoffError wraps an error of package owned: ErrHandoffFile when it
// refused a file or directory.
func handoffError(what string, err error) error {
	if errors.Is(err, owned.ErrUnsafe) {
		return fmt.Errorf("%w: %w", ErrHandoffFile, err)
	}
	return fmt.Errorf("mountspec: %s: %w", what, err)
}

// DecodeSpec decodes and validates a JSON Spec. The version is checked
// first, so that a Spec of another version fails with ErrVersion rather
// than with a complaint about a field this build does not know.
func DecodeSpec(b []byte) (Spec, error) {
	var v struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return Spec{}, fmt.Errorf("%w: not a JSON object: %w", ErrInvalid, redactJSONError(err))
	}
	if v.Version == nil {
		return Spec{}, fmt.Errorf("%w: no version field", ErrVersion)
	}
	if *v.Version != Version {
		return Spec{}, fmt.Errorf("%w: version %d (this build reads version %d; are the node plugin and the mount process from different releases?)", ErrVersion, *v.Version, Version)
	}
	var s Spec
	if err := strictDecode(b, &s); err != nil {
		return Spec{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := s.Validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// redactJSONError keeps what a decoding error says about fields and drops
// what it could quote of a value: a syntax error shows the offending
// character, which may belong to a secret.
func redactJSONError(err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Errorf("not valid JSON (at byte %d)", syn.Offset)
	}
	return err
}

// strictDecode decodes one JSON value into v, refusing unknown fields and
// trailing data.
func strictDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

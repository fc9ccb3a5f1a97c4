package supervisor

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// credentialsJSON is the format of the credentials in a rotation file.
type credentialsJSON struct {
	AccessKeyID        string `json:"accessKeyID,omitempty"`
	SecretAccessKey    string `json:"secretAccessKey,omitempty"`
	SessionToken       string `json:"sessionToken,omitempty"`
	GCSCredentialsJSON string `json:"gcsCredentialsJSON,omitempty"`
}

// maxCredentialsFile bounds what ReadRotation reads.
const maxCredentialsFile = 1 << 20

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

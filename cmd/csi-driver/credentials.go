package main

import (
	"github.com/basin-csi/basin/pkg/objstore"
	"github.com/basin-csi/basin/pkg/supervisor"
)

// readCredentialsFile reads the credentials the node plugin handed over
// (`mount --credentials-file PATH`) and removes the file, so the secret is
// on disk only while the FUSE process starts. It refuses a file that is
// not a regular 0600 file owned by this user.
func readCredentialsFile(path string) (objstore.Credentials, error) {
	return supervisor.ReadCredentialsFile(path)
}

// writeCredentialsFile writes c to a new 0600 file in the 0700 directory
// dir for a FUSE process to read with readCredentialsFile.
func writeCredentialsFile(dir string, c objstore.Credentials) (path string, err error) {
	return supervisor.WriteCredentialsFile(dir, c)
}

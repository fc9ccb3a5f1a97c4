package fuse

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"maps"

	"github.com/basin-csi/basin/pkg/objstore"
)

// A claim (exclusive.go) is a conditional PUT, and the store client
// retries a request whose answer it did not get (a connection reset, a
// timeout): when the first attempt had stored the claim, the retry meets
// it and the creator is told EEXIST for its own new file (found by make
// soak, a create of a fresh name taking 7 s on a loaded node). So each
// claim carries a random token in its metadata; a claim that fails with
// ErrExists reads the object's metadata, and finds its own token when
// the object is its own first attempt. The token stays on the empty
// object until the file's first upload replaces it. In uploadMode async
// the claim is the first upload (exclusiveupload.go), and the token is
// the file's, made at create and kept in its acknowledgement note: every
// attempt of that upload (the SDK's retry, the uploader's next try, a
// successor's) finds its own object, and keeps no copy of it aside.

// claimTokenKey is the user-metadata key of a claim's token.
const claimTokenKey = "basin-claim"

// newClaimToken is a fresh random token.
func newClaimToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// withClaimToken returns meta with the token added (meta is not changed).
func withClaimToken(meta map[string]string, token string) map[string]string {
	m := maps.Clone(meta)
	if m == nil {
		m = map[string]string{}
	}
	m[claimTokenKey] = token
	return m
}

// ownClaim returns key's attributes if the object there is the one this
// mount's claim with token stored (an empty claim, or in async mode the
// file's first upload: exclusiveupload.go).
func (f *FS) ownClaim(ctx context.Context, key, token string) (objstore.ObjectInfo, bool) {
	info, err := f.store.Stat(ctx, key)
	if err != nil || info.Metadata[claimTokenKey] != token {
		return objstore.ObjectInfo{}, false
	}
	return info, true
}

package gcsstore

import (
	"errors"
	"fmt"

	"cloud.google.com/go/storage"

	"github.com/basin-csi/basin/pkg/objstore"
)

// absent is the precondition of a conditional create
// (objstore.PutOptions.IfAbsent): ifGenerationMatch=0, which GCS checks
// when it finalises the upload, single request or resumable.
var absent = storage.Conditions{DoesNotExist: true}

// existsErr reports the loss of a conditional create, 412 from GCS, as
// objstore.ErrExists. err is already mapped (mapErr); other errors pass
// through. The precondition error is kept as text only: a lost create is
// not a changed object (ESTALE) to the caller.
func existsErr(err error) error {
	if errors.Is(err, objstore.ErrPreconditionFailed) {
		return fmt.Errorf("%w (%v)", objstore.ErrExists, err)
	}
	return err
}

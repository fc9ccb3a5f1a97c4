package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/basin-csi/basin/pkg/driver/volumeattr"
	"github.com/basin-csi/basin/pkg/objstore"
)

// The volume record is a small JSON object the controller stores with
// each volume it creates: the volume's name (a second CreateVolume of
// another name that maps to the same bucket or prefix is refused) and its
// capacity (recorded, not enforced; a second CreateVolume of the same
// name with a capacity range the recorded capacity does not fit is
// refused, as the CSI spec asks).
//
// A prefix volume's record is the body of the prefix's directory marker
// (the object "<prefix>"), which the volume's file system never shows. A
// bucket volume's record is the object bucketRecordKey at the bucket's
// root.
const (
	recordKind      = "basin.csi.dev/volume-v1"
	bucketRecordKey = ".basin-volume"
	maxRecordSize   = 64 << 10
)

// volumeRecord is the stored record.
type volumeRecord struct {
	Kind          string `json:"kind"`
	Name          string `json:"name"`
	CapacityBytes int64  `json:"capacityBytes"`
}

// recordKey is where v's record lives in its bucket.
func recordKey(v volumeID) string {
	if v.Provisioning == volumeattr.ProvisionBucket {
		return bucketRecordKey
	}
	return v.Prefix
}

// readRecord returns the record at key. found is false when there is no
// object or an empty one (a plain directory marker: the prefix is adopted).
// A body that is not a record is returned with an empty Kind.
func readRecord(ctx context.Context, s objstore.Store, key string) (rec volumeRecord, found bool, err error) {
	rc, _, err := s.Read(ctx, key, objstore.ReadOptions{Length: -1})
	if errors.Is(err, objstore.ErrNotFound) {
		return volumeRecord{}, false, nil
	}
	if err != nil {
		return volumeRecord{}, false, fmt.Errorf("read volume record %q: %w", key, err)
	}
	defer func() { _ = rc.Close() }()
	body, err := io.ReadAll(io.LimitReader(rc, maxRecordSize))
	if err != nil {
		return volumeRecord{}, false, fmt.Errorf("read volume record %q: %w", key, err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return volumeRecord{}, false, nil
	}
	if json.Unmarshal(body, &rec) != nil || rec.Kind != recordKind {
		return volumeRecord{}, true, nil
	}
	return rec, true, nil
}

// writeRecord stores rec at key.
func writeRecord(ctx context.Context, s objstore.Store, key string, rec volumeRecord) error {
	body, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if _, err := s.Put(ctx, key, bytes.NewReader(body), objstore.PutOptions{Size: int64(len(body)), ContentType: "application/json"}); err != nil {
		return fmt.Errorf("write volume record %q: %w", key, err)
	}
	return nil
}

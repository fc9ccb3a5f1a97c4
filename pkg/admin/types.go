package admin

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// Sentinel errors of the admin endpoint.
var (
	// ErrNotServing: no process answers on the volume's admin socket.
	ErrNotServing = errors.New("admin: no process serves the volume")
	// ErrInvalidArgument: the request's parameters are not acceptable.
	ErrInvalidArgument = errors.New("admin: invalid argument")
	// ErrRemote: the serving process failed the request.
	ErrRemote = errors.New("admin: request failed")
)

// Info describes the process serving a volume.
type Info struct {
	VolumeID string    `json:"volumeID"`
	CacheDir string    `json:"cacheDir"`
	PID      int       `json:"pid"`
	Started  time.Time `json:"started"`
	Version  string    `json:"version,omitempty"`
}

// Stats are a volume cache's usage and counters.
type Stats struct {
	VolumeID string `json:"volumeID"`
	CacheDir string `json:"cacheDir"`
	// Live: a FUSE process serves the volume and the counters are its own
	// since Started. Offline the counters are zero: only the usage is
	// known.
	Live    bool      `json:"live"`
	Started time.Time `json:"started,omitzero"`

	UsedBytes     int64 `json:"usedBytes"`
	CapacityBytes int64 `json:"capacityBytes"`
	Objects       int64 `json:"objects"`
	PinnedObjects int64 `json:"pinnedObjects"`

	// Hits and misses of reads the cache served from its blocks: reads
	// of partly cached files. Fully cached files are read from their
	// local file (passthrough or splice) and count in LocalOpens instead.
	Hits       int64 `json:"hits"`
	Misses     int64 `json:"misses"`
	HitBytes   int64 `json:"hitBytes"`
	MissBytes  int64 `json:"missBytes"`
	LocalOpens int64 `json:"localOpens"`
	// BucketRequests and BucketBytes are the cache's own requests to the
	// bucket (block fetches, Stat and List).
	BucketRequests int64 `json:"bucketRequests"`
	BucketBytes    int64 `json:"bucketBytes"`
	Evictions      int64 `json:"evictions"`

	// Counters of the file system (live only).
	PassthroughOpens int64 `json:"passthroughOpens"`
	UserOpens        int64 `json:"userOpens"`
}

// HitRatio is the fraction of the bytes read through the cache's blocks
// that were cached already (reads of fully cached files, served from
// their local file, are not counted); ok is false before any such read.
func (s Stats) HitRatio() (ratio float64, ok bool) {
	total := s.HitBytes + s.MissBytes
	if total <= 0 {
		return 0, false
	}
	return float64(s.HitBytes) / float64(total), true
}

// Order is the order of a listing.
type Order string

const (
	// Oldest lists the least recently used objects first (the next
	// eviction victims).
	Oldest Order = "oldest"
	// Largest lists the objects allocating the most bytes first.
	Largest Order = "largest"
)

// EntryQuery selects the entries of a listing.
type EntryQuery struct {
	Order Order
	// Limit caps the entries; <= 0 means all.
	Limit  int
	Prefix string
}

// values encodes q as URL parameters.
func (q EntryQuery) values() url.Values {
	v := url.Values{}
	if q.Order != "" {
		v.Set("order", string(q.Order))
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Prefix != "" {
		v.Set("prefix", q.Prefix)
	}
	return v
}

// parseEntryQuery decodes URL parameters; the order defaults to Oldest.
func parseEntryQuery(v url.Values) (EntryQuery, error) {
	q := EntryQuery{Order: Order(v.Get("order")), Prefix: v.Get("prefix")}
	switch q.Order {
	case "":
		q.Order = Oldest
	case Oldest, Largest:
	default:
		return q, fmt.Errorf("%w: order %q: want %q or %q", ErrInvalidArgument, q.Order, Oldest, Largest)
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return q, fmt.Errorf("%w: limit %q", ErrInvalidArgument, s)
		}
		q.Limit = n
	}
	return q, nil
}

// Entry is one cached object version.
type Entry struct {
	Key           string    `json:"key"`
	Version       string    `json:"version"`
	Size          int64     `json:"size"`
	AllocBytes    int64     `json:"allocBytes"`
	BlockSize     int64     `json:"blockSize"`
	Blocks        int       `json:"blocks"`
	PresentBlocks int       `json:"presentBlocks"`
	LastAccess    time.Time `json:"lastAccess,omitzero"`
}

// VerifyReport is what an integrity check of a cache found.
type VerifyReport struct {
	Objects      int64 `json:"objects"`
	Blocks       int64 `json:"blocks"`
	IndexedBytes int64 `json:"indexedBytes"`
	FileBytes    int64 `json:"fileBytes"`
	// Problems lists every inconsistency: corrupted blocks, missing or
	// orphaned data files, accounting errors. Empty means sound.
	Problems []string `json:"problems"`
}

// GCRequest says how far to evict.
type GCRequest struct {
	// TargetBytes, when >= 0, is the allocation to evict down to.
	TargetBytes int64
	// CapacityBytes, when > 0 and without a target, evicts to the low
	// watermark of this capacity instead of the cache's own.
	CapacityBytes int64
}

// values encodes r as URL parameters.
func (r GCRequest) values() url.Values {
	v := url.Values{}
	if r.TargetBytes >= 0 {
		v.Set("target", strconv.FormatInt(r.TargetBytes, 10))
	}
	if r.CapacityBytes > 0 {
		v.Set("capacity", strconv.FormatInt(r.CapacityBytes, 10))
	}
	return v
}

func parseGCRequest(v url.Values) (GCRequest, error) {
	r := GCRequest{TargetBytes: -1}
	for name, p := range map[string]*int64{"target": &r.TargetBytes, "capacity": &r.CapacityBytes} {
		if s := v.Get(name); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				return r, fmt.Errorf("%w: %s %q: want a byte count", ErrInvalidArgument, name, s)
			}
			*p = n
		}
	}
	return r, nil
}

// GCResult is what an eviction run did.
type GCResult struct {
	BeforeBytes int64 `json:"beforeBytes"`
	AfterBytes  int64 `json:"afterBytes"`
	TargetBytes int64 `json:"targetBytes"`
	Evicted     int64 `json:"evicted"`
}

// errorBody is the JSON body of a failed request.
type errorBody struct {
	Error string `json:"error"`
}

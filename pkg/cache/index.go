package cache

import (
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// The bbolt schema (schemaVersion 1). Keys of "listings" and "inodes"
// carry a "/" in front because bbolt keys cannot be empty and the root is "".
var (
	// bucketMeta holds the keys below.
	bucketMeta = []byte("meta")
	// bucketObjects: object key → objRecord (one cached version per key).
	bucketObjects = []byte("objects")
	// bucketATime: object key → last access (8-byte big-endian unix ns).
	bucketATime = []byte("atime")
	// bucketLRU: access time (8 bytes BE) + object key → empty; iterated
	// oldest first by eviction. Mirrors bucketATime exactly.
	bucketLRU = []byte("lru")
	// bucketAttrs: object key → attrRecord (Stat cache).
	bucketAttrs = []byte("attrs")
	// bucketNegative: object key → fetch time of a "not found".
	bucketNegative = []byte("negative")
	// bucketListings: "/" + directory prefix → listing (List cache).
	bucketListings = []byte("listings")
	// bucketInodes: "/" + path → inode number (8 bytes BE).
	bucketInodes = []byte("inodes")
	// bucketPaths: inode number (8 bytes BE) → path.
	bucketPaths = []byte("paths")
	// bucketObjMeta: object key → objMetaRecord (user metadata of one
	// version, objmeta.go).
	bucketObjMeta = []byte("objmeta")

	allBuckets = [][]byte{bucketMeta, bucketObjects, bucketATime, bucketLRU, bucketAttrs,
		bucketNegative, bucketListings, bucketInodes, bucketPaths, bucketObjMeta}
)

// Keys of bucketMeta.
var (
	metaSchema  = []byte("schema")  // uint64: schema version
	metaOrigin  = []byte("origin")  // Options.Origin the data belongs to
	metaClean   = []byte("clean")   // present after a clean Close
	metaNextIno = []byte("nextino") // uint64: next inode number to hand out
	metaUsed    = []byte("used")    // uint64: sum of objRecord.Alloc
	metaObjects = []byte("objects") // uint64: number of object records
)

const (
	schemaVersion = 1
	rootIno       = 1
)

// migrations[v] upgrades an index of schema v to v+1. Schema 1 is the
// first; later versions add their step here.
func migrations() map[uint64]func(*bolt.Tx) error {
	return map[uint64]func(*bolt.Tx) error{}
}

// index is the bbolt database with a group-commit writer: concurrent
// update calls share one transaction and one fsync.
type index struct {
	db *bolt.DB

	reqs    chan *commitReq
	stopped chan struct{}

	mu sync.Mutex // guards closed
	// closed is set once Close began; update then fails.
	closed bool
}

type commitReq struct {
	fn   func(*bolt.Tx) error
	done chan error
}

const maxCommitBatch = 1024

func openIndex(path string) (*index, error) {
	db, err := bolt.Open(path, fileMode, &bolt.Options{
		Timeout:        time.Second,
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s", ErrLocked, path)
	}
	if err != nil {
		return nil, fmt.Errorf("cache: open index: %w", err)
	}
	ix := &index{db: db, reqs: make(chan *commitReq, maxCommitBatch), stopped: make(chan struct{})}
	if err := db.Update(initSchema); err != nil {
		_ = db.Close()
		return nil, err
	}
	go ix.commitLoop()
	return ix, nil
}

// initSchema creates the buckets of a new index and migrates an old one.
func initSchema(tx *bolt.Tx) error {
	for _, name := range allBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("cache: create bucket %s: %w", name, err)
		}
	}
	meta := tx.Bucket(bucketMeta)
	raw := meta.Get(metaSchema)
	if raw == nil {
		// A new index: the root directory is inode 1.
		if err := tx.Bucket(bucketInodes).Put(pathKey(""), u64(rootIno)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketPaths).Put(u64(rootIno), []byte{}); err != nil {
			return err
		}
		if err := meta.Put(metaNextIno, u64(rootIno+1)); err != nil {
			return err
		}
		// Nothing to recover in a new index.
		if err := meta.Put(metaClean, []byte{1}); err != nil {
			return err
		}
		return meta.Put(metaSchema, u64(schemaVersion))
	}
	v, err := getU64(raw)
	if err != nil {
		return err
	}
	if v > schemaVersion {
		return fmt.Errorf("%w: schema %d, this binary knows %d", ErrSchemaTooNew, v, schemaVersion)
	}
	steps := migrations()
	for ; v < schemaVersion; v++ {
		step, ok := steps[v]
		if !ok {
			return fmt.Errorf("%w: no migration from schema %d", ErrCorruptRecord, v)
		}
		if err := step(tx); err != nil {
			return fmt.Errorf("cache: migrate schema %d: %w", v, err)
		}
	}
	return meta.Put(metaSchema, u64(schemaVersion))
}

// pathKey is the key of a path or directory prefix in the buckets that
// allow the empty string.
func pathKey(p string) []byte { return append([]byte{'/'}, p...) }

// view runs a read-only transaction.
func (ix *index) view(fn func(*bolt.Tx) error) error { return ix.db.View(fn) }

// update runs fn in a write transaction shared with concurrent callers and
// returns once it is durable. fn may run more than once (if another
// function of its batch fails, each is retried alone), so it must have no
// effects outside the transaction.
func (ix *index) update(fn func(*bolt.Tx) error) error {
	ix.mu.Lock()
	if ix.closed {
		ix.mu.Unlock()
		return ErrClosed
	}
	req := &commitReq{fn: fn, done: make(chan error, 1)}
	ix.reqs <- req
	ix.mu.Unlock()
	return <-req.done
}

func (ix *index) commitLoop() {
	defer close(ix.stopped)
	batch := make([]*commitReq, 0, maxCommitBatch)
	for req := range ix.reqs {
		batch = append(batch[:0], req)
	drain:
		for len(batch) < maxCommitBatch {
			select {
			case r, ok := <-ix.reqs:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		ix.commit(batch)
	}
}

func (ix *index) commit(batch []*commitReq) {
	failed := -1
	err := ix.db.Update(func(tx *bolt.Tx) error {
		for i, r := range batch {
			if err := r.fn(tx); err != nil {
				failed = i
				return err
			}
		}
		return nil
	})
	if err == nil || len(batch) == 1 {
		for _, r := range batch {
			r.done <- err
		}
		return
	}
	if failed < 0 {
		// The commit itself failed: every caller learns it.
		for _, r := range batch {
			r.done <- err
		}
		return
	}
	// One function failed: run each alone so the others still commit.
	for _, r := range batch {
		r.done <- ix.db.Update(r.fn)
	}
}

// close stops the writer after pending updates and closes the database.
func (ix *index) close() error {
	ix.mu.Lock()
	if !ix.closed {
		ix.closed = true
		close(ix.reqs)
	}
	ix.mu.Unlock()
	<-ix.stopped
	return ix.db.Close()
}

// Meta counters.

func getMetaU64(tx *bolt.Tx, key []byte) uint64 {
	v, err := getU64(tx.Bucket(bucketMeta).Get(key))
	if err != nil {
		return 0
	}
	return v
}

func putMetaU64(tx *bolt.Tx, key []byte, v uint64) error {
	return tx.Bucket(bucketMeta).Put(key, u64(v))
}

// addMeta adds delta to a meta counter, never going below zero.
func addMeta(tx *bolt.Tx, key []byte, delta int64) error {
	if delta == 0 {
		return nil
	}
	v := int64(getMetaU64(tx, key)) + delta
	if v < 0 {
		v = 0
	}
	return putMetaU64(tx, key, uint64(v))
}

// lruKey is the bucketLRU key of an access.
func lruKey(atime int64, key string) []byte {
	return append(u64(uint64(atime)), key...)
}

// setATime records key's access time in bucketATime and bucketLRU.
func setATime(tx *bolt.Tx, key string, atime int64) error {
	at, lru := tx.Bucket(bucketATime), tx.Bucket(bucketLRU)
	if old := at.Get([]byte(key)); old != nil {
		if v, err := getU64(old); err == nil {
			if int64(v) == atime {
				return nil
			}
			if err := lru.Delete(lruKey(int64(v), key)); err != nil {
				return err
			}
		}
	}
	if err := at.Put([]byte(key), u64(uint64(atime))); err != nil {
		return err
	}
	return lru.Put(lruKey(atime, key), nil)
}

// deleteObject removes key's object record and access time, keeping the
// meta counters in step.
func deleteObject(tx *bolt.Tx, key string) error {
	objs := tx.Bucket(bucketObjects)
	if old := objs.Get([]byte(key)); old != nil {
		if h, _, err := decodeObjectHeader(old); err == nil {
			if err := addMeta(tx, metaUsed, -h.Alloc); err != nil {
				return err
			}
		}
		if err := addMeta(tx, metaObjects, -1); err != nil {
			return err
		}
		if err := objs.Delete([]byte(key)); err != nil {
			return err
		}
	}
	at := tx.Bucket(bucketATime)
	if old := at.Get([]byte(key)); old != nil {
		if v, err := getU64(old); err == nil {
			if err := tx.Bucket(bucketLRU).Delete(lruKey(int64(v), key)); err != nil {
				return err
			}
		}
		return at.Delete([]byte(key))
	}
	return nil
}

// putObject stores key's object record, keeping the meta counters in step.
func putObject(tx *bolt.Tx, key string, rec *objRecord) error {
	objs := tx.Bucket(bucketObjects)
	delta, count := rec.Alloc, int64(1)
	if old := objs.Get([]byte(key)); old != nil {
		count = 0
		if h, _, err := decodeObjectHeader(old); err == nil {
			delta -= h.Alloc
		}
	}
	if err := objs.Put([]byte(key), encodeObject(rec)); err != nil {
		return err
	}
	if err := addMeta(tx, metaUsed, delta); err != nil {
		return err
	}
	return addMeta(tx, metaObjects, count)
}

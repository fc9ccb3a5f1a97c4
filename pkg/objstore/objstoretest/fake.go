package objstoretest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Op names one kind of call, for counters and injected failures.
type Op string

// The operations of Store and Admin.
const (
	OpStat         Op = "Stat"
	OpRead         Op = "Read"
	OpList         Op = "List"
	OpPut          Op = "Put"
	OpDelete       Op = "Delete"
	OpCopy         Op = "Copy"
	OpDeletePrefix Op = "DeletePrefix"
	OpStreamPart   Op = "StreamPart" // one part of a streamed upload
	OpBucketExists Op = "BucketExists"
	OpCreateBucket Op = "CreateBucket"
	OpDeleteBucket Op = "DeleteBucket"
)

// Hook runs at the start of every call, after the injected latency and
// before the injected error, with the call's key (Copy: the source; List and
// DeletePrefix: the prefix; Admin calls do not run it). A non-nil result
// fails the call. It may block (on ctx) to hold calls back, e.g. to make
// readers pile up.
type Hook func(ctx context.Context, op Op, key string) error

// maxKeyLen is S3's and GCS's limit, which the fake enforces too.
const maxKeyLen = 1024

// Fake is an in-memory objstore.Store for unit tests. It behaves like a
// strongly consistent bucket (the conformance suite checks it), counts calls
// and bytes, and fails or slows down calls on request. Safe for concurrent
// use. The zero value is not usable; call NewFake.
type Fake struct {
	// calls[op] counts calls started, including failed ones.
	calls     sync.Map // Op -> *atomic.Int64
	bytesRead atomic.Int64

	mu sync.Mutex
	// guarded by mu
	objects map[string]fakeObject
	keys    []string // sorted keys of objects
	gen     int64    // last version handed out
	errs    map[Op]error
	latency time.Duration
	hook    Hook
	closed  bool
}

type fakeObject struct {
	data    []byte // never modified after Put
	version string
	modTime time.Time
	meta    map[string]string // user metadata, never modified in place
}

var _ objstore.Store = (*Fake)(nil)

// NewFake returns an empty fake bucket.
func NewFake() *Fake {
	return &Fake{objects: make(map[string]fakeObject), errs: make(map[Op]error)}
}

// SetError makes every later call of op fail with err (nil clears it).
func (f *Fake) SetError(op Op, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.errs, op)
		return
	}
	f.errs[op] = err
}

// SetLatency delays every later call by d (honouring the call's context).
func (f *Fake) SetLatency(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.latency = d
}

// SetHook installs h (nil removes it).
func (f *Fake) SetHook(h Hook) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = h
}

// Calls returns how many calls of op were started.
func (f *Fake) Calls(op Op) int64 {
	if c, ok := f.calls.Load(op); ok {
		return c.(*atomic.Int64).Load()
	}
	return 0
}

// BytesRead returns how many body bytes Read callers consumed.
func (f *Fake) BytesRead() int64 { return f.bytesRead.Load() }

// ResetCounters zeroes Calls and BytesRead.
func (f *Fake) ResetCounters() {
	f.calls.Range(func(_, c any) bool { c.(*atomic.Int64).Store(0); return true })
	f.bytesRead.Store(0)
}

// Keys returns the stored keys in order, for assertions.
func (f *Fake) Keys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.keys)
}

// SetModTime sets the last-modified time of the object under key, as if
// it had been stored at t (tests of age-based decisions); ErrNotFound if
// there is none.
func (f *Fake) SetModTime(key string, t time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objects[key]
	if !ok {
		return fmt.Errorf("objstoretest: %s: %w", key, objstore.ErrNotFound)
	}
	o.modTime = t
	f.objects[key] = o
	return nil
}

// begin counts the call and applies latency, hook and injected error.
func (f *Fake) begin(ctx context.Context, op Op, key string) error {
	c, _ := f.calls.LoadOrStore(op, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)

	f.mu.Lock()
	latency, hook, injected, closed := f.latency, f.hook, f.errs[op], f.closed
	f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("objstoretest: %s %q: %w", op, key, err)
	}
	if closed {
		return fmt.Errorf("objstoretest: %s %q on a closed store: %w", op, key, objstore.ErrUnavailable)
	}
	if latency > 0 {
		t := time.NewTimer(latency)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("objstoretest: %s %q: %w", op, key, ctx.Err())
		}
	}
	if hook != nil {
		if err := hook(ctx, op, key); err != nil {
			return fmt.Errorf("objstoretest: %s %q: %w", op, key, err)
		}
	}
	if injected != nil {
		return fmt.Errorf("objstoretest: %s %q: %w", op, key, injected)
	}
	return nil
}

func checkKey(key string) error {
	if key == "" || len(key) > maxKeyLen || !utf8.ValidString(key) {
		return fmt.Errorf("objstoretest: key %q: %w", key, objstore.ErrInvalidKey)
	}
	return nil
}

func (o fakeObject) info(key string) objstore.ObjectInfo {
	return objstore.ObjectInfo{Key: key, Size: int64(len(o.data)), Version: o.version, ModTime: o.modTime,
		Metadata: objstore.NormalizeMetadata(o.meta)}
}

func (f *Fake) get(key string) (fakeObject, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objects[key]
	if !ok {
		return fakeObject{}, fmt.Errorf("objstoretest: %q: %w", key, objstore.ErrNotFound)
	}
	return o, nil
}

// Stat implements objstore.Store.
func (f *Fake) Stat(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	if err := f.begin(ctx, OpStat, key); err != nil {
		return objstore.ObjectInfo{}, err
	}
	if err := checkKey(key); err != nil {
		return objstore.ObjectInfo{}, err
	}
	o, err := f.get(key)
	if err != nil {
		return objstore.ObjectInfo{}, err
	}
	return o.info(key), nil
}

// Read implements objstore.Store.
func (f *Fake) Read(ctx context.Context, key string, opts objstore.ReadOptions) (io.ReadCloser, objstore.ObjectInfo, error) {
	if err := f.begin(ctx, OpRead, key); err != nil {
		return nil, objstore.ObjectInfo{}, err
	}
	if err := checkKey(key); err != nil {
		return nil, objstore.ObjectInfo{}, err
	}
	o, err := f.get(key)
	if err != nil {
		return nil, objstore.ObjectInfo{}, err
	}
	info := o.info(key)
	if opts.IfVersion != "" && opts.IfVersion != o.version {
		return nil, info, fmt.Errorf("objstoretest: %q has version %s, not %s: %w", key, o.version, opts.IfVersion, objstore.ErrPreconditionFailed)
	}
	size := int64(len(o.data))
	if opts.Offset < 0 || opts.Offset > size {
		return nil, info, fmt.Errorf("objstoretest: offset %d of %q (size %d): %w", opts.Offset, key, size, objstore.ErrInvalidRange)
	}
	end := size
	if opts.Length >= 0 && opts.Length < size-opts.Offset {
		end = opts.Offset + opts.Length
	}
	return &fakeBody{ctx: ctx, r: bytes.NewReader(o.data[opts.Offset:end]), read: &f.bytesRead}, info, nil
}

// fakeBody fails once its context is done, like a network body.
type fakeBody struct {
	ctx  context.Context
	r    *bytes.Reader
	read *atomic.Int64
}

func (b *fakeBody) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, fmt.Errorf("objstoretest: read body: %w", err)
	}
	n, err := b.r.Read(p)
	b.read.Add(int64(n))
	return n, err
}

func (b *fakeBody) Close() error { return nil }

// Put implements objstore.Store.
func (f *Fake) Put(ctx context.Context, key string, body io.Reader, opts objstore.PutOptions) (objstore.ObjectInfo, error) {
	if err := f.begin(ctx, OpPut, key); err != nil {
		return objstore.ObjectInfo{}, err
	}
	if err := checkKey(key); err != nil {
		return objstore.ObjectInfo{}, err
	}
	var buf bytes.Buffer
	if opts.Size > 0 {
		buf.Grow(int(min(opts.Size, 64<<20)))
	}
	chunk := make([]byte, 256<<10)
	for {
		if err := ctx.Err(); err != nil {
			return objstore.ObjectInfo{}, fmt.Errorf("objstoretest: put %q: %w", key, err)
		}
		n, err := body.Read(chunk)
		buf.Write(chunk[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return objstore.ObjectInfo{}, fmt.Errorf("objstoretest: put %q: read body: %w", key, err)
		}
	}
	if opts.Size >= 0 && int64(buf.Len()) != opts.Size {
		return objstore.ObjectInfo{}, fmt.Errorf("objstoretest: put %q: body has %d bytes, Size says %d", key, buf.Len(), opts.Size)
	}
	if opts.IfAbsent {
		return f.create(key, buf.Bytes(), opts.Metadata)
	}
	return f.store(key, buf.Bytes(), opts.Metadata), nil
}

// create installs data as key's first version, or fails with ErrExists.
func (f *Fake) create(key string, data []byte, meta map[string]string) (objstore.ObjectInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.objects[key]; ok {
		return objstore.ObjectInfo{}, fmt.Errorf("objstoretest: put %q: %w", key, objstore.ErrExists)
	}
	return f.storeLocked(key, data, meta), nil
}

// store installs data as the new version of key.
func (f *Fake) store(key string, data []byte, meta map[string]string) objstore.ObjectInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.storeLocked(key, data, meta)
}

// storeLocked is store; the caller holds mu.
func (f *Fake) storeLocked(key string, data []byte, meta map[string]string) objstore.ObjectInfo {
	f.gen++
	o := fakeObject{data: data, version: strconv.FormatInt(f.gen, 10), modTime: time.Now(), meta: objstore.NormalizeMetadata(meta)}
	if _, ok := f.objects[key]; !ok {
		i, _ := slices.BinarySearch(f.keys, key)
		f.keys = slices.Insert(f.keys, i, key)
	}
	f.objects[key] = o
	return o.info(key)
}

// remove deletes key if present; the caller holds mu.
func (f *Fake) remove(key string) bool {
	if _, ok := f.objects[key]; !ok {
		return false
	}
	delete(f.objects, key)
	if i, ok := slices.BinarySearch(f.keys, key); ok {
		f.keys = slices.Delete(f.keys, i, i+1)
	}
	return true
}

// Delete implements objstore.Store.
func (f *Fake) Delete(ctx context.Context, key string) error {
	if err := f.begin(ctx, OpDelete, key); err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.remove(key)
	return nil
}

// Copy implements objstore.Store.
func (f *Fake) Copy(ctx context.Context, src, dst string) (objstore.ObjectInfo, error) {
	if err := f.begin(ctx, OpCopy, src); err != nil {
		return objstore.ObjectInfo{}, err
	}
	if err := checkKey(src); err != nil {
		return objstore.ObjectInfo{}, err
	}
	if err := checkKey(dst); err != nil {
		return objstore.ObjectInfo{}, err
	}
	o, err := f.get(src)
	if err != nil {
		return objstore.ObjectInfo{}, err
	}
	return f.store(dst, o.data, o.meta), nil
}

// DeletePrefix implements objstore.Store.
func (f *Fake) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	if err := f.begin(ctx, OpDeletePrefix, prefix); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	i, _ := slices.BinarySearch(f.keys, prefix)
	j := i
	for j < len(f.keys) && strings.HasPrefix(f.keys[j], prefix) {
		delete(f.objects, f.keys[j])
		j++
	}
	f.keys = slices.Delete(f.keys, i, j)
	return j - i, nil
}

// Close implements objstore.Store. Later calls fail with ErrUnavailable.
func (f *Fake) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

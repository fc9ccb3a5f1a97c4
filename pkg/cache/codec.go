package cache

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/basin-csi/basin/pkg/objstore"
)

// Index values are hand-encoded: a format byte, then uvarint/varint
// fields and length-prefixed strings. Every decoder checks bounds, rejects
// trailing bytes and never allocates more than a small multiple of its
// input, so a corrupt index yields ErrCorruptRecord, never a panic or an
// out-of-memory (FuzzDecode checks this).

const recordFormatV1 = 1

// objRecord is the persistent state of one cached object version
// (bucket "objects", key = object key).
type objRecord struct {
	Version   string
	Size      int64
	ModTime   time.Time
	BlockSize int64
	// Alloc is the data file's allocated bytes (st_blocks*512) when the
	// record was written; meta "used" is the sum of all records' Alloc.
	Alloc int64
	// Present has one bit per block (LSB first within a word).
	Present []uint64
	// CRCs has one CRC32C per block; entries of absent blocks are 0.
	CRCs []uint32
}

// attrRecord is a cached Stat result (bucket "attrs").
type attrRecord struct {
	Size      int64
	Version   string
	ModTime   time.Time
	FetchedAt time.Time
}

func numBlocks(size, bs int64) int {
	if size <= 0 {
		return 0
	}
	return int((size + bs - 1) / bs)
}

func timeToInt(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64
	}
	return t.UnixNano()
}

func intToTime(n int64) time.Time {
	if n == math.MinInt64 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// encoder helpers.

func putUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }
func putVarint(b []byte, v int64) []byte   { return binary.AppendVarint(b, v) }
func putString(b []byte, s string) []byte {
	return append(putUvarint(b, uint64(len(s))), s...)
}
func putTime(b []byte, t time.Time) []byte { return putVarint(b, timeToInt(t)) }

// decoder is a bounds-checked reader with a sticky error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s", ErrCorruptRecord, what)
	}
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// nonNeg reads a uvarint that must fit an int64.
func (d *decoder) nonNeg(what string) int64 {
	v := d.uvarint(what)
	if v > math.MaxInt64 {
		d.fail(what)
		return 0
	}
	return int64(v)
}

func (d *decoder) raw(n uint64, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(what)
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) str(what string) string {
	return string(d.raw(d.uvarint(what), what))
}

func (d *decoder) time(what string) time.Time { return intToTime(d.varint(what)) }

func (d *decoder) format() {
	if d.err == nil && (len(d.b) == 0 || d.b[0] != recordFormatV1) {
		d.fail("format byte")
	}
	if d.err == nil {
		d.b = d.b[1:]
	}
}

func (d *decoder) end() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	return d.err
}

// encodeObject encodes r; r.Present and r.CRCs must cover every block.
func encodeObject(r *objRecord) []byte {
	n := numBlocks(r.Size, r.BlockSize)
	b := make([]byte, 0, 32+len(r.Version)+n/8+1+4*n)
	b = append(b, recordFormatV1)
	b = putString(b, r.Version)
	b = putUvarint(b, uint64(r.Size))
	b = putTime(b, r.ModTime)
	b = putUvarint(b, uint64(r.BlockSize))
	b = putUvarint(b, uint64(r.Alloc))
	for i := 0; i < (n+7)/8; i++ {
		b = append(b, byte(r.Present[i/8]>>(8*(i%8))))
	}
	for i := 0; i < n; i++ {
		if r.Present[i/64]&(1<<(i%64)) != 0 {
			b = binary.LittleEndian.AppendUint32(b, r.CRCs[i])
		}
	}
	return b
}

// decodeObjectHeader decodes the fixed fields of an object record without
// its bitmap, for accounting.
func decodeObjectHeader(b []byte) (r objRecord, rest []byte, err error) {
	d := decoder{b: b}
	d.format()
	r.Version = d.str("version")
	r.Size = d.nonNeg("size")
	r.ModTime = d.time("modtime")
	r.BlockSize = d.nonNeg("block size")
	r.Alloc = d.nonNeg("alloc")
	if d.err == nil && (r.BlockSize < 4096 || r.BlockSize > maxBlockSize || r.BlockSize%4096 != 0) {
		d.fail("block size")
	}
	return r, d.b, d.err
}

// decodeObject decodes a whole object record.
func decodeObject(b []byte) (objRecord, error) {
	r, rest, err := decodeObjectHeader(b)
	if err != nil {
		return objRecord{}, err
	}
	d := decoder{b: rest}
	n := numBlocks(r.Size, r.BlockSize)
	bm := d.raw(uint64((n+7)/8), "bitmap")
	if d.err != nil {
		return objRecord{}, d.err
	}
	r.Present = make([]uint64, (n+63)/64)
	for i, v := range bm {
		r.Present[i/8] |= uint64(v) << (8 * (i % 8))
	}
	if n%64 != 0 && len(r.Present) > 0 && r.Present[len(r.Present)-1]>>(n%64) != 0 {
		d.fail("bitmap padding")
	}
	count := 0
	for _, w := range r.Present {
		count += bits.OnesCount64(w)
	}
	crcs := d.raw(uint64(count)*4, "crcs")
	if d.err != nil {
		return objRecord{}, d.err
	}
	r.CRCs = make([]uint32, n)
	j := 0
	for i := 0; i < n; i++ {
		if r.Present[i/64]&(1<<(i%64)) != 0 {
			r.CRCs[i] = binary.LittleEndian.Uint32(crcs[4*j:])
			j++
		}
	}
	return r, d.end()
}

func encodeAttr(r attrRecord) []byte {
	b := make([]byte, 0, 40+len(r.Version))
	b = append(b, recordFormatV1)
	b = putUvarint(b, uint64(r.Size))
	b = putString(b, r.Version)
	b = putTime(b, r.ModTime)
	return putTime(b, r.FetchedAt)
}

func decodeAttr(b []byte) (attrRecord, error) {
	d := decoder{b: b}
	d.format()
	var r attrRecord
	r.Size = d.nonNeg("size")
	r.Version = d.str("version")
	r.ModTime = d.time("modtime")
	r.FetchedAt = d.time("fetch time")
	if err := d.end(); err != nil {
		return attrRecord{}, err
	}
	return r, nil
}

// encodeNegative encodes a "not found" entry (bucket "negative").
func encodeNegative(fetchedAt time.Time) []byte {
	return putTime([]byte{recordFormatV1}, fetchedAt)
}

func decodeNegative(b []byte) (time.Time, error) {
	d := decoder{b: b}
	d.format()
	t := d.time("fetch time")
	return t, d.end()
}

// encodeListing encodes l, whose keys and prefixes all start with dir;
// only the suffixes are stored.
func encodeListing(dir string, l *Listing) []byte {
	b := make([]byte, 0, 16+len(l.Objects)*48+len(l.Prefixes)*16)
	b = append(b, recordFormatV1)
	b = putTime(b, l.FetchedAt)
	b = putUvarint(b, uint64(len(l.Objects)))
	for _, o := range l.Objects {
		b = putString(b, o.Key[len(dir):])
		b = putUvarint(b, uint64(o.Size))
		b = putString(b, o.Version)
		b = putTime(b, o.ModTime)
	}
	b = putUvarint(b, uint64(len(l.Prefixes)))
	for _, p := range l.Prefixes {
		b = putString(b, p[len(dir):])
	}
	return b
}

func decodeListing(dir string, b []byte) (Listing, error) {
	d := decoder{b: b}
	d.format()
	var l Listing
	l.FetchedAt = d.time("fetch time")
	// Each object takes at least 4 bytes and each prefix 1, which bounds
	// the allocations by the input size.
	n := d.uvarint("object count")
	if d.err == nil && n > uint64(len(d.b))/4 {
		d.fail("object count")
	}
	if d.err == nil && n > 0 {
		l.Objects = make([]objstore.ObjectInfo, 0, n)
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		o := objstore.ObjectInfo{Key: dir + d.str("key")}
		o.Size = d.nonNeg("size")
		o.Version = d.str("version")
		o.ModTime = d.time("modtime")
		l.Objects = append(l.Objects, o)
	}
	n = d.uvarint("prefix count")
	if d.err == nil && n > uint64(len(d.b)) {
		d.fail("prefix count")
	}
	if d.err == nil && n > 0 {
		l.Prefixes = make([]string, 0, n)
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		l.Prefixes = append(l.Prefixes, dir+d.str("prefix"))
	}
	if err := d.end(); err != nil {
		return Listing{}, err
	}
	return l, nil
}

// u64 encodes inode numbers, counters and times as 8 big-endian bytes, so
// bbolt's byte order is numeric order.
func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func getU64(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: %d-byte integer", ErrCorruptRecord, len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}

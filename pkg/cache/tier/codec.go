package tier

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
)

// Identity names one run of blocks of one origin object version.
type Identity struct {
	// Origin is the origin's endpoint, bucket and prefix (the cache's
	// Options.Origin).
	Origin string `json:"origin"`
	// Key is the object's key under the origin's prefix.
	Key string `json:"key"`
	// Version is the object's ETag or generation, from the volume's own
	// listing or HEAD.
	Version string `json:"version"`
	// Size is the object's size.
	Size int64 `json:"size"`
	// BlockSize is the cache block size the run is cut in.
	BlockSize int64 `json:"blockSize"`
	// First is the first block, Blocks the number of blocks.
	First  int `json:"first"`
	Blocks int `json:"blocks"`
}

// Len is the number of bytes of the run.
func (id Identity) Len() int64 {
	return min(id.Size, int64(id.First+id.Blocks)*id.BlockSize) - int64(id.First)*id.BlockSize
}

// blockLen is the length of the run's i-th block.
func (id Identity) blockLen(i int) int64 {
	off := int64(id.First+i) * id.BlockSize
	return min(id.BlockSize, id.Size-off)
}

// valid reports whether id names a non-empty run inside the object.
func (id Identity) valid() bool {
	return id.BlockSize > 0 && id.First >= 0 && id.Blocks > 0 && id.Size > int64(id.First+id.Blocks-1)*id.BlockSize
}

// ObjectKey is the tier object's key (under the tier's prefix).
func (id Identity) ObjectKey() string {
	h := sha256.New()
	for _, s := range []string{id.Origin, id.Key, id.Version,
		strconv.FormatInt(id.Size, 10), strconv.FormatInt(id.BlockSize, 10),
		strconv.Itoa(id.First), strconv.Itoa(id.Blocks)} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	sum := hex.EncodeToString(h.Sum(nil))
	return "basin/" + sum[:2] + "/" + sum
}

// magic starts every tier object (format version 1).
const magic = "BASINTR1"

// maxHeader bounds the header a reader accepts.
const maxHeader = 1 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is a tier object's header: the Identity and a CRC32C per block.
type header struct {
	Identity
	CRC32C []uint32 `json:"crc32c"`
}

// errCorrupt: a tier object is not the run asked for, or its bytes fail
// their checksum.
var errCorrupt = errors.New("tier: object does not match its identity or checksum")

// encodeHeader returns the bytes before the run's data.
func encodeHeader(id Identity, crcs []uint32) ([]byte, error) {
	h, err := json.Marshal(header{Identity: id, CRC32C: crcs})
	if err != nil {
		return nil, fmt.Errorf("tier: encode header: %w", err)
	}
	b := make([]byte, 0, len(magic)+4+len(h))
	b = append(b, magic...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(h)))
	return append(b, h...), nil
}

// decode reads a tier object from r into bufs (one per block of id, of
// the blocks' lengths) and returns the blocks' CRC32Cs. Anything but the
// object id names, whole and intact, is errCorrupt; a failing r's error
// is returned as it is.
func decode(r io.Reader, id Identity, bufs [][]byte) ([]uint32, error) {
	var pre [len(magic) + 4]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, shortIsCorrupt(err)
	}
	n := binary.BigEndian.Uint32(pre[len(magic):])
	if string(pre[:len(magic)]) != magic || n > maxHeader {
		return nil, errCorrupt
	}
	hb := make([]byte, n)
	if _, err := io.ReadFull(r, hb); err != nil {
		return nil, shortIsCorrupt(err)
	}
	var h header
	if err := json.Unmarshal(hb, &h); err != nil || h.Identity != id || len(h.CRC32C) != id.Blocks || len(bufs) != id.Blocks {
		return nil, errCorrupt
	}
	for i, buf := range bufs {
		if int64(len(buf)) != id.blockLen(i) {
			return nil, fmt.Errorf("tier: buffer %d of %d bytes for a block of %d", i, len(buf), id.blockLen(i))
		}
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, shortIsCorrupt(err)
		}
		if crc32.Checksum(buf, castagnoli) != h.CRC32C[i] {
			return nil, errCorrupt
		}
	}
	var one [1]byte
	switch _, err := io.ReadFull(r, one[:]); {
	case err == nil:
		return nil, errCorrupt // longer than its identity says
	case err != io.EOF:
		return nil, err
	}
	return h.CRC32C, nil
}

// shortIsCorrupt maps a body that ended early to errCorrupt.
func shortIsCorrupt(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errCorrupt
	}
	return err
}

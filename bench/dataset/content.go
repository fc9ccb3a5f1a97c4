package dataset

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
)

// ErrMismatch reports bytes that differ from the generated content.
var ErrMismatch = errors.New("dataset: content mismatch")

// contentReader yields the deterministic bytes of one object: the
// little-endian words of a PCG stream (fast, and fixed by its spec).
type contentReader struct {
	rng     *rand.PCG
	left    int64
	pending [8]byte // bytes of the current word not yet returned
	npend   int
}

// Content returns a reader of the size bytes of the object at key.
func (s Set) Content(key string, size int64) io.Reader {
	return &contentReader{rng: s.source(key), left: size}
}

// source is the random stream of key's content: a PCG seeded by
// sha256(Seed, key).
func (s Set) source(key string) *rand.PCG {
	h := sha256.New()
	var seed [8]byte
	binary.LittleEndian.PutUint64(seed[:], s.Seed)
	h.Write(seed[:])
	h.Write([]byte(key))
	sum := h.Sum(nil)
	return rand.NewPCG(binary.LittleEndian.Uint64(sum[0:8]), binary.LittleEndian.Uint64(sum[8:16]))
}

func (r *contentReader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n := 0
	for n < len(p) && r.npend > 0 { // finish the previous word
		p[n] = r.pending[8-r.npend]
		n++
		r.npend--
	}
	for ; n+8 <= len(p); n += 8 {
		binary.LittleEndian.PutUint64(p[n:], r.rng.Uint64())
	}
	if n < len(p) { // start a word, keep the rest
		binary.LittleEndian.PutUint64(r.pending[:], r.rng.Uint64())
		r.npend = 8
		for n < len(p) {
			p[n] = r.pending[8-r.npend]
			n++
			r.npend--
		}
	}
	r.left -= int64(n)
	return n, nil
}

// Verify reads r to the end and checks that it holds exactly the content
// of the object at key (FileSize bytes).
func (s Set) Verify(key string, r io.Reader) error {
	want := s.Content(key, s.FileSize)
	a := make([]byte, 256<<10)
	b := make([]byte, len(a))
	var off int64
	for {
		n, err := io.ReadFull(r, a)
		if n > 0 {
			if _, werr := io.ReadFull(want, b[:n]); werr != nil {
				return fmt.Errorf("%w: %s is longer than %d bytes", ErrMismatch, key, s.FileSize)
			}
			if !bytes.Equal(a[:n], b[:n]) {
				return fmt.Errorf("%w: %s differs in [%d, %d)", ErrMismatch, key, off, off+int64(n))
			}
			off += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if off != s.FileSize {
		return fmt.Errorf("%w: %s has %d bytes, want %d", ErrMismatch, key, off, s.FileSize)
	}
	return nil
}

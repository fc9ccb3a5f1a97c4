package cache

import (
	"context"
	"os"
	"testing"

	"github.com/basin-csi/basin/internal/directio"
)

// A large staged file that was written directly (as the FUSE layer writes
// a streamed file) is checksummed from direct reads: the install leaves
// its pages out of the page cache, and every block's checksum is right.
func TestInstallLargeFileReadsDirectly(t *testing.T) {
	opts := testOpts()
	opts.CacheBlockSize = 1 * mib // pooled buffers are aligned mappings from 1 MiB
	c, fake, dir := newFixture(t, opts)
	if !directSupported(t, dir) {
		t.Fatal("the test directory's file system refuses O_DIRECT, which this test is about")
	}
	data := randBytes(801, directInstallMin+100*kib+5) // the last block short
	aligned := len(data) / directio.Align * directio.Align

	f, err := os.CreateTemp(c.StagingDir(), "w-")
	if err != nil {
		t.Fatal(err)
	}
	d, err := directio.Reopen(f, os.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	buf := directio.Buf(aligned)
	copy(buf, data)
	if _, err := d.WriteAt(buf, 0); err != nil {
		t.Fatal(err)
	}
	_ = d.Close()
	if _, err := f.WriteAt(data[aligned:], int64(aligned)); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	info := put(t, fake, "ckpt/large", data)

	if err := c.Install(context.Background(), info, f.Name()); err != nil {
		t.Fatal(err)
	}
	h := openObj(t, c, info)
	defer func() { _ = h.Close() }()
	if _, resident := residentPages(t, h.o.path); resident > 1 {
		t.Errorf("%d pages of the installed file are in the page cache, want at most the short tail's", resident)
	}
	for b := 0; b < h.o.nblocks; b++ {
		lo := int64(b) * h.o.bs
		if want := blockCRC(data[lo : lo+h.o.blockLen(b)]); h.o.crcs[b] != want {
			t.Errorf("block %d: checksum %08x, want %08x", b, h.o.crcs[b], want)
		}
	}
}

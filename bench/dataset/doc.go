// Package dataset generates the benchmark's data sets deterministically,
// into a bucket (through objstore.Store) or a local directory (the
// "ceiling" baseline), so every system under test reads the same bytes.
//
// Four sets, each under its own key prefix:
//
//   - small:      ImageNet-like, Files × FileSize spread round-robin over
//     Dirs directories (default 20,000 × 128 KiB in 100 directories);
//   - checkpoint: Files shards of FileSize (default 4 × 1 GiB);
//   - tree:       Files zero-byte objects in a tree Depth levels deep with
//     Fanout directories per level (default 100,000 in 10×10×10);
//   - images:     Files JPEGs of varied sizes (about 10–250 KiB) in Dirs
//     class directories, an ImageFolder (default 5,000 in 50).
//
// Every object's content (the images' pixels too) is a PCG stream seeded from the set's seed and
// the object's key, so a reader can check any byte it got (Verify) and the
// data cannot be compressed or deduplicated. After a complete write a
// marker object (_bench/<name>.json) records the Set; Write skips a set
// whose marker matches, so reruns do not upload again.
package dataset

// Package objstoretest holds what tests need around objstore.Store: the
// conformance suite every adapter passes against its real server
// (RunConformance), and Fake, an in-memory Store with call counters and
// error / latency injection for unit tests of the layers above (cache, fuse,
// driver).
//
// The suite states the contract precisely where store.go leaves room:
//   - Read's ObjectInfo describes the whole object, whatever the range.
//   - Offset == Size yields an empty body, Offset > Size ErrInvalidRange,
//     Length 0 an empty body; IfVersion is checked even then.
//   - A backend may refuse a key it cannot store with ErrInvalidKey (the
//     suite allows that only for keys such as "a/../b" and "./x"); every key
//     it accepts must come back byte-exact from Stat, Read and List.
//   - List pages hold at most MaxKeys objects + common prefixes together, in
//     lexicographic order, and together return every item exactly once.
//   - A cancelled context surfaces as an error wrapping context.Canceled.
package objstoretest

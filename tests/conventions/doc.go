// Package conventions holds tests over the repository's own code that keep
// its seams from breaking again: the import graph stays one way, also
// through indirect imports, which golangci-lint's depguard (direct imports
// only) cannot see; and no test skips on its own, so that a missing server,
// tool, root or /dev/fuse fails under CI=true instead of passing silently;
// and each caller of the warmup engine reaches it through one glue file.
package conventions

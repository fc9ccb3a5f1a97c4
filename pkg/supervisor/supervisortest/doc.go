// Package supervisortest holds hand-written fakes of the supervisor's
// ProcessRunner and Kernel, for tests that must not fork or mount.
package supervisortest

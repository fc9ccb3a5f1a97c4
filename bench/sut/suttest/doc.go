// Package suttest holds a hand-written fake sut.System for tests of code
// that drives systems under test (the runner).
package suttest

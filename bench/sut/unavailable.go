package sut

import (
	"context"
	"fmt"
)

// unavailable is a System that cannot run because something it depends on
// (its object-store server) could not be set up.
type unavailable struct {
	System
	why string
}

// Unavailable wraps s so that Check reports why, wrapping ErrUnavailable.
func Unavailable(s System, why string) System { return unavailable{System: s, why: why} }

// Check implements System.
func (u unavailable) Check(context.Context) error {
	return fmt.Errorf("%w: %s", ErrUnavailable, u.why)
}

package warmupctl

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// ErrInvalidSchedule: spec.schedule is not a five-field cron schedule.
var ErrInvalidSchedule = errors.New("warmupctl: invalid schedule")

// parseSchedule parses a five-field cron schedule ("0 2 * * *"), in UTC;
// "" is no schedule (nil). Time zone prefixes are refused: the contract
// is UTC.
func parseSchedule(spec string) (cron.Schedule, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	if strings.Contains(spec, "TZ=") {
		return nil, fmt.Errorf("%w %q: no time zone (the schedule is in UTC)", ErrInvalidSchedule, spec)
	}
	p := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)
	s, err := p.Parse("CRON_TZ=UTC " + spec)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrInvalidSchedule, spec, err)
	}
	return s, nil
}

// nextRun is the schedule's first time after t, or zero without one.
func nextRun(s cron.Schedule, t time.Time) time.Time {
	if s == nil {
		return time.Time{}
	}
	return s.Next(t)
}

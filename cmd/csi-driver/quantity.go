package main

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// errBadQuantity is wrapped by parseQuantity's errors.
var errBadQuantity = errors.New("invalid quantity")

// quantitySuffixes are the Kubernetes resource.Quantity suffixes: binary
// (Ki = 1024) and decimal (k = 1000).
var quantitySuffixes = map[string]int64{
	"":   1,
	"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60,
	"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
}

// parseQuantity parses a non-negative byte size written as a Kubernetes
// quantity ("10Gi", "512Mi", "1.5G", "4096"), rounding a fraction of a byte
// up as resource.Quantity.Value does. Exponent forms ("1e3") are not
// accepted.
func parseQuantity(s string) (int64, error) {
	num := strings.TrimRightFunc(s, func(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' })
	suffix := s[len(num):]
	mult, ok := quantitySuffixes[suffix]
	if !ok {
		return 0, fmt.Errorf("%w %q: unknown suffix %q (use Ki, Mi, Gi, Ti, Pi, Ei, k, M, G, T, P, E)", errBadQuantity, s, suffix)
	}
	if num == "" || strings.Trim(num, "0123456789.") != "" || strings.Count(num, ".") > 1 || num == "." {
		return 0, fmt.Errorf("%w %q: want digits with an optional fraction and suffix, e.g. 10Gi", errBadQuantity, s)
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("%w %q", errBadQuantity, s)
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	q, rem := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if rem.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return 0, fmt.Errorf("%w %q: too large", errBadQuantity, s)
	}
	return q.Int64(), nil
}

// parseTTL parses a metadata TTL: a Go duration ("90s", "2h"), "0" for no
// caching, or "-1" for forever (returned as -1).
func parseTTL(s string) (time.Duration, error) {
	switch s {
	case "0":
		return 0, nil
	case "-1":
		return -1, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid TTL %q: want a duration such as 90s or 2h, 0 (no caching) or -1 (forever)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("invalid TTL %q: the only negative value is -1 (forever)", s)
	}
	return d, nil
}

// formatTTL is parseTTL's inverse, for defaults in --help.
func formatTTL(d time.Duration) string {
	if d < 0 {
		return "-1"
	}
	if d == 0 {
		return "0"
	}
	return d.String()
}

// formatQuantity renders a size with the largest exact binary suffix.
func formatQuantity(n int64) string {
	for _, s := range []string{"Ei", "Pi", "Ti", "Gi", "Mi", "Ki"} {
		if m := quantitySuffixes[s]; n != 0 && n%m == 0 {
			return fmt.Sprintf("%d%s", n/m, s)
		}
	}
	return fmt.Sprint(n)
}

package main

import (
	"errors"
	"testing"
	"time"
)

func TestParseQuantity(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"0", 0, false},
		{"4096", 4096, false},
		{"10Gi", 10 << 30, false},
		{"512Mi", 512 << 20, false},
		{"4Ki", 4096, false},
		{"1Ei", 1 << 60, false},
		{"1.5Gi", 3 << 29, false},
		{"1k", 1000, false},
		{"2G", 2e9, false},
		{"0.5", 1, false}, // rounds up like resource.Quantity.Value
		{"1.0001k", 1001, false},
		{"", 0, true},
		{"Gi", 0, true},
		{"-1Gi", 0, true},
		{"10GB", 0, true},
		{"10 Gi", 0, true},
		{"1e3", 0, true},
		{"1..2", 0, true},
		{".", 0, true},
		{"8Ei", 0, true}, // overflows int64
		{"99999999999999999999", 0, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseQuantity(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseQuantity(%q) error %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, errBadQuantity) {
				t.Errorf("error %v does not wrap errBadQuantity", err)
			}
			if got != tc.want {
				t.Errorf("parseQuantity(%q) = %d, want %d", tc.in, got, tc.want)
			}
		})
	}
}

func TestFormatQuantityRoundTrip(t *testing.T) {
	for _, n := range []int64{0, 1, 1000, 4096, 10 << 30, 3 << 29, 1<<62 + 7} {
		s := formatQuantity(n)
		got, err := parseQuantity(s)
		if err != nil || got != n {
			t.Errorf("formatQuantity(%d) = %q, parses back to %d, %v", n, s, got, err)
		}
	}
}

func FuzzParseQuantity(f *testing.F) {
	for _, s := range []string{"10Gi", "1.5G", "0", "4096", "1e3", "-1", "9Ei"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseQuantity(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("parseQuantity(%q) = %d < 0", s, n)
		}
		if back, err := parseQuantity(formatQuantity(n)); err != nil || back != n {
			t.Fatalf("round trip of %d (from %q): %d, %v", n, s, back, err)
		}
	})
}

func TestParseTTL(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"0", 0, false},
		{"-1", -1, false},
		{"90s", 90 * time.Second, false},
		{"2h", 2 * time.Hour, false},
		{"0s", 0, false},
		{"-2s", 0, true},
		{"-1s", 0, true},
		{"forever", 0, true},
		{"10", 0, true},
		{"", 0, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseTTL(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseTTL(%q) = %v, %v; want %v, err=%v", tc.in, got, err, tc.want, tc.wantErr)
			}
			if err == nil {
				if back, err := parseTTL(formatTTL(got)); err != nil || back != got {
					t.Errorf("round trip %v: %v, %v", got, back, err)
				}
			}
		})
	}
}

package shmem

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize reads a byte count: a decimal integer with an optional binary
// suffix K, M or G (also KiB, MiB, GiB; case-insensitive), e.g. "8",
// "64K", "1MiB". The result is in [0, 1 TiB].
func ParseSize(s string) (int, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := 1
	for _, suf := range []struct {
		s string
		m int
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(t, suf.s) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, suf.s)), suf.m
			break
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad size %q (want a number of bytes, optionally with K, M or G)", s)
	}
	if v > (1<<40)/int64(mult) {
		return 0, fmt.Errorf("size %q too large (at most 1 TiB)", s)
	}
	return int(v) * mult, nil
}

// ParseSizes reads a comma-separated list of sizes, each at least 1.
func ParseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		v, err := ParseSize(f)
		if err != nil {
			return nil, err
		}
		if v < 1 {
			return nil, fmt.Errorf("size %q must be at least 1 byte", f)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty size list %q", s)
	}
	return out, nil
}

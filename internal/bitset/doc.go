// Package bitset is a compact fixed-size set of small non-negative integers.
package bitset

package design

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/icn-hpc/icn/internal/par"
)

// Verification is the result of checking a block table.
type Verification struct {
	N            int      `json:"n"`
	M            int      `json:"m"`
	Lambda       int      `json:"lambda"`
	Blocks       int      `json:"blocks"`
	OK           bool     `json:"ok"`
	ProblemCount int      `json:"problem_count"`
	Problems     []string `json:"problems,omitempty"` // the first few, 1-based numbers
}

const maxProblems = 20

func (v *Verification) problem(format string, args ...any) {
	v.ProblemCount++
	if len(v.Problems) < maxProblems {
		v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
	}
}

// Verify checks that blocks (0-based elements) form a symmetric design on
// n elements: n blocks, every block of m distinct elements, every element
// in m blocks and every pair of elements in exactly λ blocks. m is the size
// of the first block; λ is wantLambda if positive, otherwise the number of
// blocks holding elements 0 and 1. Pairs are counted per element on all
// cores: O(N·m²) work, O(N) memory per worker. Messages use 1-based numbers.
func Verify(n int, blocks [][]int, wantLambda int) Verification {
	v := Verification{N: n, Blocks: len(blocks)}
	if n < 2 {
		v.problem("need at least 2 elements, have %d", n)
		return v
	}
	if len(blocks) == 0 {
		v.problem("no blocks")
		return v
	}
	v.M = len(blocks[0])
	if len(blocks) != n {
		v.problem("%d blocks for %d elements: a symmetric design has as many blocks as elements", len(blocks), n)
	}
	inc := v.incidence(n, blocks)
	v.checkReplication(inc)
	v.Lambda = wantLambda
	if v.Lambda <= 0 {
		v.Lambda += blocksSharing01(blocks, inc) // as before: a negative wantLambda offsets the count
	}
	v.checkPairs(n, blocks, inc)
	if v.Lambda > 0 && v.M > 0 && int64(v.Lambda)*int64(n-1) != int64(v.M)*int64(v.M-1) && v.ProblemCount == 0 {
		v.problem("N=%d, m=%d, λ=%d violate N = m(m-1)/λ + 1", n, v.M, v.Lambda)
	}
	v.OK = v.ProblemCount == 0
	return v
}

// incidence checks block sizes and elements and lists the blocks holding
// each element (each element once per block).
func (v *Verification) incidence(n int, blocks [][]int) [][]int32 {
	inc := make([][]int32, n) // blocks containing each element
	seen := make([]int, n)
	for i := range seen {
		seen[i] = -1
	}
	for b, blk := range blocks {
		if len(blk) != v.M {
			v.problem("block %d has %d elements, block 1 has %d", b+1, len(blk), v.M)
		}
		for _, x := range blk {
			if x < 0 || x >= n {
				v.problem("block %d: element %d out of range 1..%d", b+1, x+1, n)
				continue
			}
			if seen[x] == b {
				v.problem("block %d lists element %d twice", b+1, x+1)
				continue
			}
			seen[x] = b
			inc[x] = append(inc[x], int32(b))
		}
	}
	return inc
}

// checkReplication checks that every element is in m blocks.
func (v *Verification) checkReplication(inc [][]int32) {
	for x := range inc {
		if len(inc[x]) != v.M {
			v.problem("element %d is in %d blocks, want m=%d", x+1, len(inc[x]), v.M)
		}
	}
}

// blocksSharing01 counts the blocks holding both elements 0 and 1.
func blocksSharing01(blocks [][]int, inc [][]int32) int {
	l := 0
	for _, b := range inc[0] {
		for _, y := range blocks[b] {
			if y == 1 {
				l++
			}
		}
	}
	return l
}

// checkPairs counts, per element x on all cores, the blocks x shares with
// every later element and reports the pairs that do not share λ.
func (v *Verification) checkPairs(n int, blocks [][]int, inc [][]int32) {
	workers := par.Workers(0)
	cnts := make([][]int32, workers)
	perX := make([][]string, n)
	bad := make([]int, n)
	par.For(n, workers, func(w, x int) {
		if cnts[w] == nil {
			cnts[w] = make([]int32, n)
		}
		cnt := cnts[w]
		for _, b := range inc[x] {
			for _, y := range blocks[b] {
				if y > x && y < n {
					cnt[y]++
				}
			}
		}
		for y := x + 1; y < n; y++ {
			if int(cnt[y]) != v.Lambda {
				bad[x]++
				if len(perX[x]) < maxProblems {
					perX[x] = append(perX[x], fmt.Sprintf("elements %d and %d share %d blocks, want λ=%d", x+1, y+1, cnt[y], v.Lambda))
				}
			}
			cnt[y] = 0
		}
	})
	for x := 0; x < n; x++ {
		v.ProblemCount += bad[x]
		for _, p := range perX[x] {
			if len(v.Problems) < maxProblems {
				v.Problems = append(v.Problems, p)
			}
		}
	}
}

// VerifyDiffSet checks that every non-zero residue mod n is a difference
// of exactly lambda ordered pairs of D (then the translates of D form
// B(n, |D|, λ)); O(|D|²) time.
func VerifyDiffSet(n int, d []int, lambda int) Verification {
	v := Verification{N: n, M: len(d), Lambda: lambda, Blocks: n}
	cnt := make([]int32, n)
	in := make([]bool, n)
	for _, x := range d {
		if x < 0 || x >= n || in[x] {
			v.problem("difference set element %d repeated or out of range 0..%d", x, n-1)
			return v
		}
		in[x] = true
	}
	for _, a := range d {
		for _, b := range d {
			if a != b {
				cnt[((a-b)%n+n)%n]++
			}
		}
	}
	for r := 1; r < n; r++ {
		if int(cnt[r]) != lambda {
			v.problem("difference %d occurs %d times, want λ=%d", r, cnt[r], lambda)
		}
	}
	v.OK = v.ProblemCount == 0
	return v
}

// VerifyDiffTarget checks that residue r is a difference of exactly
// target[r] ordered pairs of D (quasi-designs).
func VerifyDiffTarget(n int, d []int, target []int) Verification {
	v := Verification{N: n, M: len(d), Blocks: n}
	if len(target) != n {
		v.problem("target has %d entries for N=%d", len(target), n)
		return v
	}
	v.Lambda = target[1]
	cnt := make([]int, n)
	for i, a := range d {
		for j, b := range d {
			if i != j {
				cnt[((a-b)%n+n)%n]++
			}
		}
	}
	for r := 1; r < n; r++ {
		if cnt[r] != target[r] {
			v.problem("difference %d occurs %d times, want %d", r, cnt[r], target[r])
		}
	}
	v.OK = v.ProblemCount == 0
	return v
}

// VerifyXorSet is VerifyDiffSet for the group Z_2^k (n = 2^k, difference
// = xor).
func VerifyXorSet(n int, d []int, lambda int) Verification {
	v := Verification{N: n, M: len(d), Lambda: lambda, Blocks: n}
	if n&(n-1) != 0 {
		v.problem("%d is not a power of 2", n)
		return v
	}
	cnt := make([]int32, n)
	for i, a := range d {
		for j, b := range d {
			if i != j {
				cnt[(a^b)&(n-1)]++
			}
		}
	}
	for r := 1; r < n; r++ {
		if int(cnt[r]) != lambda {
			v.problem("difference %d occurs %d times, want λ=%d", r, cnt[r], lambda)
		}
	}
	v.OK = v.ProblemCount == 0
	return v
}

// Verify checks the design by the cheapest exact method: its difference
// set if it is cyclic, otherwise the block table.
func (d *Design) Verify() Verification {
	switch {
	case d.Target != nil:
		return VerifyDiffTarget(d.N, d.DiffSet, d.Target)
	case d.DiffSet != nil:
		return VerifyDiffSet(d.N, d.DiffSet, d.Lambda)
	case d.XorSet != nil:
		return VerifyXorSet(d.N, d.XorSet, d.Lambda)
	}
	return Verify(d.N, d.blocks, d.Lambda)
}

// ParseBlocks reads a block table: either JSON ({"blocks": [[…]]} as
// written by `icn design bibd --json`, or a bare array of arrays), or text
// with one block per line, elements numbered from 1 and separated by
// spaces, tabs or commas. Text lines may start with a block label ending in
// ':' or '|' ("3: 1 5 6"); '#' starts a comment. It returns 0-based blocks
// and N, the largest element number.
func ParseBlocks(data string) (blocks [][]int, n int, err error) {
	s := strings.TrimSpace(data)
	if s == "" {
		return nil, 0, fmt.Errorf("empty block table")
	}
	if s[0] == '{' || s[0] == '[' {
		var raw [][]int
		if s[0] == '{' {
			var doc struct {
				Blocks [][]int `json:"blocks"`
			}
			if err := json.Unmarshal([]byte(s), &doc); err != nil {
				return nil, 0, fmt.Errorf("block table JSON: %v", err)
			}
			raw = doc.Blocks
		} else if err := json.Unmarshal([]byte(s), &raw); err != nil {
			return nil, 0, fmt.Errorf("block table JSON: %v", err)
		}
		for i, b := range raw {
			row := make([]int, len(b))
			for j, x := range b {
				if x < 1 || x > maxElement {
					return nil, 0, fmt.Errorf("block %d: element %d out of range 1..%d (elements are numbered from 1)", i+1, x, maxElement)
				}
				row[j] = x - 1
				n = max(n, x)
			}
			blocks = append(blocks, row)
		}
	} else {
		for ln, line := range strings.Split(s, "\n") {
			if i := strings.IndexByte(line, '#'); i >= 0 {
				line = line[:i]
			}
			if i := strings.IndexAny(line, ":|"); i >= 0 {
				line = line[i+1:]
			}
			fields := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' || r == ';' || r == '\r' })
			if len(fields) == 0 {
				continue
			}
			row := make([]int, len(fields))
			for j, f := range fields {
				x, err := strconv.Atoi(f)
				if err != nil {
					return nil, 0, fmt.Errorf("line %d: %q is not an element number", ln+1, f)
				}
				if x < 1 || x > maxElement {
					return nil, 0, fmt.Errorf("line %d: element %d out of range 1..%d (elements are numbered from 1)", ln+1, x, maxElement)
				}
				row[j] = x - 1
				n = max(n, x)
			}
			blocks = append(blocks, row)
		}
	}
	if len(blocks) == 0 {
		return nil, 0, fmt.Errorf("block table has no blocks")
	}
	if int64(len(blocks))*int64(n) > 4*MaxIncidences {
		return nil, 0, fmt.Errorf("block table too large (%d blocks, %d elements)", len(blocks), n)
	}
	return blocks, n, nil
}

const maxElement = 10_000_000

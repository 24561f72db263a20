package routing

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The decoding side of AppendRuns, and step names as RouteJSON.Dirs holds
// them, for those who keep routes in AppendRuns' bytes (the compact file
// format, the fabric manager's store).

// CutRuns splits the steps of one route, as AppendRuns wrote them, off the
// front of b: runs are its run bytes (RunOf decodes one, AppendRunDirs and
// AppendRunNames expand them), rest the bytes after them. It fails when b
// ends early or a run's direction is not one of the nd directions of the
// torus (2 per dimension).
func CutRuns(b []byte, nd int) (runs, rest []byte, err error) {
	n, k := uint64(0), 1
	if len(b) > 0 && b[0] < 0x80 {
		n = uint64(b[0]) // every route of fewer than 128 runs
	} else if n, k = binary.Uvarint(b); k <= 0 {
		return nil, nil, errors.New("run count cut short")
	}
	if n > uint64(len(b)-k) {
		return nil, nil, fmt.Errorf("%d runs, %d bytes left", n, len(b)-k)
	}
	runs, rest = b[k:k+int(n)], b[k+int(n):]
	for _, x := range runs {
		if int(x>>4) >= nd {
			return nil, nil, fmt.Errorf("direction code %d is not a direction of a %d-dimensional torus", x>>4, nd/2)
		}
	}
	return runs, rest, nil
}

// RunOf decodes one run byte of AppendRuns: its direction and its number
// of steps (1..16).
func RunOf(x byte) (d Dir, steps int) { return Dir(x >> 4), int(x&15) + 1 }

// AppendRunDirs appends the steps of run bytes (CutRuns) to dirs.
func AppendRunDirs(dirs []Dir, runs []byte) []Dir {
	for _, x := range runs {
		d, n := RunOf(x)
		for range n {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// stepNames are the names of the directions (Dir.String), made once.
var stepNames = func() (names [2 * MaxDims]string) {
	for d := range names {
		names[d] = Dir(d).String()
	}
	return names
}()

// AppendRunNames appends the steps of run bytes (CutRuns, with directions
// of at most MaxDims dimensions) to names as RouteJSON.Dirs holds them
// ("+X", "-Y", …; the strings are shared, not built per step).
func AppendRunNames(names []string, runs []byte) []string {
	for _, x := range runs {
		d, n := RunOf(x)
		for range n {
			names = append(names, stepNames[d])
		}
	}
	return names
}

// AppendNamedDirs appends the directions of step names to dirs. Only the
// names Dir.String writes (and AppendRunNames gives back) are accepted, so
// steps encoded from them decode to the same names; ParseDir takes the
// other spellings.
func AppendNamedDirs(dirs []Dir, names []string) ([]Dir, error) {
	for _, s := range names {
		d := Dir(0)
		for int(d) < len(stepNames) && stepNames[d] != s {
			d++
		}
		if int(d) == len(stepNames) {
			return nil, fmt.Errorf("step %q: want +X, -X, +Y, … (as Dir.String writes them)", s)
		}
		dirs = append(dirs, d)
	}
	return dirs, nil
}

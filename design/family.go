package design

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/icn-hpc/icn/topology"
)

func init() {
	topology.RegisterFamily("dfs", "dfs:[N=N,]m=M[,lambda=L] | dfs:N=N,m=M,lambda=L|L+1",
		"distributed full switch DFS(N,m,λ): N subscribers with m ports, N m×m switches wired by the block design B(N,m,λ)",
		func(a string) (*topology.Graph, error) {
			d, err := ParseDFS(a)
			if err != nil {
				return nil, err
			}
			return DFSGraph(d, "dfs:"+a)
		})
	topology.RegisterFamily("qcd", "qcd:m=M", "minimal quasi-complete digraph (full 2D multiring) on N=m² subscribers and N m×m switches; simplex channels A→B",
		func(a string) (*topology.Graph, error) {
			q, err := ParseQCD(a)
			if err != nil {
				return nil, err
			}
			return q.Graph("qcd:" + a)
		})
	topology.RegisterFamily("smr", "smr:K=K,m=M", "multiring with sparse rings: m(m-1)+1 duplex rings of K ports, subscribers on m rings each",
		func(a string) (*topology.Graph, error) {
			s, err := ParseSparse(a)
			if err != nil {
				return nil, err
			}
			return s.Graph("smr:" + a)
		})
}

// ParseDFS reads the arguments of a dfs spec ("N=7,m=4,lambda=2",
// "m=4,lambda=2", "N=39,m=7,lambda=1|2") and builds the design.
func ParseDFS(a string) (*Design, error) {
	kv, err := parseKV(a, "n", "m", "lambda")
	if err != nil {
		return nil, err
	}
	m, err := kvInt(kv, "m", 2, 1<<20, true)
	if err != nil {
		return nil, err
	}
	lam, quasi := 1, false
	if s, ok := kv["lambda"]; ok {
		lo, hi, isRange := strings.Cut(s, "|")
		if lam, err = atoiRange(lo, "lambda", 1, 1<<20); err != nil {
			return nil, err
		}
		if isRange {
			h, err := atoiRange(hi, "lambda", 1, 1<<20)
			if err != nil {
				return nil, err
			}
			if h != lam+1 {
				return nil, fmt.Errorf("lambda=%s: only λ|λ+1 quasi-designs are supported", s)
			}
			quasi = true
		}
	}
	n, err := kvInt(kv, "n", 2, 1<<24, quasi)
	if err != nil {
		return nil, err
	}
	if quasi {
		return Quasi(n, m, lam, DefaultSearchBudget)
	}
	if _, ok := kv["n"]; !ok {
		if m*(m-1)%lam != 0 {
			return nil, fmt.Errorf("λ=%d does not divide m(m-1)=%d, so no B(N,%d,%d) exists", lam, m*(m-1), m, lam)
		}
		n = m*(m-1)/lam + 1
	}
	return Construct(n, m, lam, Options{SearchBudget: DefaultSearchBudget})
}

// ParseQCD reads "m=M" (or "N=M²").
func ParseQCD(a string) (QCD, error) {
	kv, err := parseKV(a, "m", "n")
	if err != nil {
		return QCD{}, err
	}
	if s, ok := kv["n"]; ok {
		n, err := atoiRange(s, "N", 4, 1<<20)
		if err != nil {
			return QCD{}, err
		}
		m := 1
		for m*m < n {
			m++
		}
		if m*m != n {
			return QCD{}, fmt.Errorf("node count N=%d is not a square m²", n)
		}
		if sm, ok := kv["m"]; ok && sm != strconv.Itoa(m) {
			return QCD{}, fmt.Errorf("node count N=%d needs m=%d, not m=%s", n, m, sm)
		}
		return NewQCD(m)
	}
	m, err := kvInt(kv, "m", 2, 1024, true)
	if err != nil {
		return QCD{}, err
	}
	return NewQCD(m)
}

// ParseSparse reads "K=12,m=4".
func ParseSparse(a string) (*Sparse, error) {
	kv, err := parseKV(a, "k", "m")
	if err != nil {
		return nil, err
	}
	k, err := kvInt(kv, "k", 3, 4096, true)
	if err != nil {
		return nil, err
	}
	m, err := kvInt(kv, "m", 2, 65, true)
	if err != nil {
		return nil, err
	}
	return NewSparse(k, m)
}

// parseKV splits "a=1,b=2" (keys case-insensitive, also ':' separated).
func parseKV(s string, allowed ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, tok := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ':' || r == ' ' }) {
		k, v, ok := strings.Cut(tok, "=")
		if !ok {
			return nil, fmt.Errorf("expected key=value, got %q", tok)
		}
		k = strings.ToLower(strings.TrimSpace(k))
		found := false
		for _, a := range allowed {
			found = found || a == k
		}
		if !found {
			return nil, fmt.Errorf("unknown parameter %q (allowed: %s)", k, strings.Join(allowed, ", "))
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("parameter %q given twice", k)
		}
		out[k] = strings.TrimSpace(v)
	}
	return out, nil
}

func kvInt(kv map[string]string, key string, lo, hi int, required bool) (int, error) {
	s, ok := kv[key]
	if !ok {
		if required {
			return 0, fmt.Errorf("missing parameter %s", key)
		}
		return 0, nil
	}
	name := key
	if key == "n" || key == "k" {
		name = strings.ToUpper(key)
	}
	return atoiRange(s, name, lo, hi)
}

func atoiRange(s, what string, lo, hi int) (int, error) {
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%s=%q is not a whole number", what, s)
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("%s=%d out of range %d..%d", what, v, lo, hi)
	}
	return v, nil
}

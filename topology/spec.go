package topology

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Family builds graphs of one kind from the argument part of a spec
// ("4x4x4" in "torus:4x4x4").
type Family struct {
	Name  string
	Usage string // e.g. "torus:AxBx…[:rings=R1,R2,…][:endpoints=E]"
	Help  string // one line
	Build func(args string) (*Graph, error)
}

var (
	famMu    sync.RWMutex
	families = map[string]*Family{}
)

// RegisterFamily adds a spec family. Packages that know how to build a
// network (designs, multirings as designs, presets) register themselves from
// init(); the CLI imports them so their families are accepted everywhere a
// SPEC is. Registering a name twice panics (a programming error).
func RegisterFamily(name, usage, help string, build func(args string) (*Graph, error)) {
	famMu.Lock()
	defer famMu.Unlock()
	if _, dup := families[name]; dup {
		panic("topology: family " + name + " registered twice")
	}
	families[name] = &Family{Name: name, Usage: usage, Help: help, Build: build}
}

// Families lists the registered spec families sorted by name.
func Families() []Family {
	famMu.RLock()
	defer famMu.RUnlock()
	out := make([]Family, 0, len(families))
	for _, f := range families {
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// MaxSpecNodes bounds the size of generated graphs so a typo cannot exhaust
// memory (a 3-million-node network is far beyond any use here).
const MaxSpecNodes = 3_000_000

// Parse builds a graph from a spec string such as "torus:4x4x4",
// "dragonfly:a=18,p=9,h=9" or "file:net.topo". Errors name the problem.
func Parse(spec string) (*Graph, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, fmt.Errorf("empty topology spec")
	}
	if path, ok := strings.CutPrefix(spec, "file:"); ok {
		return LoadFile(path)
	}
	fam, args, _ := strings.Cut(spec, ":")
	famMu.RLock()
	f := families[strings.ToLower(fam)]
	famMu.RUnlock()
	if f == nil {
		return nil, fmt.Errorf("unknown topology family %q in spec %q (known: %s)", fam, spec, familyNames())
	}
	g, err := f.Build(args)
	if err != nil {
		return nil, fmt.Errorf("spec %q: %v (usage: %s)", spec, err, f.Usage)
	}
	g.name = spec
	return g, nil
}

func familyNames() string {
	var names []string
	for _, f := range Families() {
		names = append(names, f.Name)
	}
	return strings.Join(names, ", ")
}

// LoadFile reads a topology file, detecting its format by content: a JSON
// or YAML spec/graph document, or ibnetdiscover / ibsim text.
func LoadFile(path string) (*Graph, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	g, err := ParseData(data, path)
	if err != nil {
		return nil, err
	}
	return g, nil
}

// ParseData parses topology file contents (see LoadFile); name is used in
// error messages.
func ParseData(data []byte, name string) (*Graph, error) {
	switch DetectFormat(data) {
	case FormatJSON:
		return ParseJSON(data, name)
	case FormatYAML:
		return ParseYAML(data, name)
	case FormatIBNet:
		return ParseIBNet(strings.NewReader(string(data)), name)
	}
	return nil, fmt.Errorf("%s: not a topology file (expected JSON, YAML or ibnetdiscover text)", name)
}

// Format is a topology file format.
type Format int

const (
	FormatUnknown Format = iota
	FormatJSON
	FormatYAML
	FormatIBNet
)

// DetectFormat guesses the format of a topology file from its content.
func DetectFormat(data []byte) Format {
	s := strings.TrimSpace(string(data))
	if strings.HasPrefix(s, "{") {
		return FormatJSON
	}
	ib, yamlish := false, false
	for _, line := range strings.Split(s, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' {
			continue
		}
		low := strings.ToLower(t)
		for _, kw := range []string{"switch", "ca", "hca", "rt", "router", "switchguid=", "caguid=", "vendid=", "devid=", "sysimgguid="} {
			if strings.HasPrefix(low, kw+"\t") || strings.HasPrefix(low, kw+" ") || (strings.HasSuffix(kw, "=") && strings.HasPrefix(low, kw)) {
				ib = true
			}
		}
		if strings.HasPrefix(t, "[") && strings.Contains(t, "]") && strings.Contains(t, "\"") {
			ib = true
		}
		if k, _, ok := strings.Cut(t, ":"); ok && !strings.ContainsAny(k, " \t\"[") {
			yamlish = true
		}
		if ib {
			return FormatIBNet
		}
	}
	if yamlish {
		return FormatYAML
	}
	return FormatUnknown
}

// ---- argument helpers ----

// parseDims parses "4x4x3" into sizes, each within [lo, 65535].
func parseDims(s string, lo int) ([]int, error) {
	if s == "" {
		return nil, fmt.Errorf("missing sizes")
	}
	parts := strings.Split(strings.ToLower(s), "x")
	dims := make([]int, len(parts))
	total := 1
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return nil, fmt.Errorf("size %q is not a whole number", p)
		}
		if n < lo {
			return nil, fmt.Errorf("size %d in dimension %s must be at least %d", n, DimName(i), lo)
		}
		if n > math.MaxInt16 {
			return nil, fmt.Errorf("size %d in dimension %s is too large", n, DimName(i))
		}
		dims[i] = n
		total *= n
		if total > MaxSpecNodes {
			return nil, fmt.Errorf("more than %d nodes", MaxSpecNodes)
		}
	}
	return dims, nil
}

// parseInt parses a whole number in [lo, hi] named what.
func parseInt(s, what string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a whole number", what, s)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%s %d out of range %d..%d", what, n, lo, hi)
	}
	return n, nil
}

// kv parses "a=1,b=2,c=3,4,5" into a map; a token without '=' extends the
// previous value (so list values may use commas). Keys must be in allowed.
func kv(s string, allowed ...string) (map[string]string, error) {
	out := map[string]string{}
	last := ""
	for _, tok := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ':' }) {
		tok = strings.TrimSpace(tok)
		k, v, ok := strings.Cut(tok, "=")
		if !ok {
			if last == "" {
				return nil, fmt.Errorf("expected key=value, got %q", tok)
			}
			out[last] += "," + tok
			continue
		}
		k = strings.ToLower(strings.TrimSpace(k))
		found := false
		for _, a := range allowed {
			if a == k {
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown parameter %q (allowed: %s)", k, strings.Join(allowed, ", "))
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("parameter %q given twice", k)
		}
		out[k] = strings.TrimSpace(v)
		last = k
	}
	return out, nil
}

// intList parses "4,4,2" or "4.4.2".
func intList(s, what string, lo, hi int) ([]int, error) {
	if s == "" {
		return nil, fmt.Errorf("%s: empty list", what)
	}
	var out []int
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '.' }) {
		n, err := parseInt(p, what, lo, hi)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func need(m map[string]string, keys ...string) error {
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return fmt.Errorf("missing parameter %q", k)
		}
	}
	return nil
}

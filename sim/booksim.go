package sim

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// BookSimFile is a BookSim2 configuration file translated into icn's
// terms: Topo is the topology spec and Set maps `icn sim` option names
// (router-delay, vcs, packet, rate, …) to values. Options a user gives on
// the command line take precedence over the file.
type BookSimFile struct {
	Topo string
	Set  map[string]string
}

// bookSimNeutral are BookSim keys whose default is what icn models: they
// are accepted with that value and refused with any other.
var bookSimNeutral = map[string]string{
	"router": "iq", "vc_allocator": "islip", "sw_allocator": "islip", "alloc_iters": "1",
	"injection_process": "bernoulli", "sim_type": "latency", "subnets": "1", "c": "1",
	"classes": "1", "output_speedup": "1", "internal_speedup": "1",
	"output_delay": "0", "st_prepare_delay": "0",
	"hold_switch_for_packet": "0", "priority": "none", "use_read_write": "0", "sim_count": "1",
	"include_queuing": "1", "packet_size_rate": "1", "measure_stats": "1",
	"arb_type": "round_robin", "buffer_policy": "private", "noq": "0", "vc_busy_when_full": "0",
	"vc_prioritize_empty": "0", "vc_shuffle_requests": "0", "batch_size": "1000", "batch_count": "1",
}

// bookSimIgnored are BookSim keys that only steer its output or its
// convergence test; icn accepts any value and uses its own criteria.
var bookSimIgnored = map[string]bool{
	"print_activity": true, "print_csv_results": true, "watch_file": true, "watch_out": true,
	"watch_flits": true, "watch_packets": true, "stats_out": true, "viewer_trace": true,
	"deadlock_warn_timeout": true, "latency_thres": true, "warmup_thres": true,
	"acc_warmup_thres": true, "stopping_thres": true, "acc_stopping_thres": true,
	"perm_seed": true,
}

// ParseBookSim reads a BookSim2 configuration ("key = value;" statements,
// // and /* */ comments) and translates the parts icn models: topology
// (torus, mesh) with k and n, routing_function dim_order (or dor on a
// mesh, as BookSim names it too), num_vcs,
// vc_buf_size, packet_size, traffic, injection_rate (and
// injection_rate_uses_flits), the router pipeline (routing_delay,
// vc_alloc_delay, sw_alloc_delay, st_final_delay, speculative: the staged
// router with BookSim's injection and ejection channels), credit_delay,
// wait_for_tail_credit, input_speedup, vct,
// use_noc_latency, warmup_periods, sample_period, max_samples and seed.
// Any other key is refused by name unless it has BookSim's default value
// for a behaviour icn shares.
func ParseBookSim(data []byte) (*BookSimFile, error) {
	kv, order, err := lexBookSim(string(data))
	if err != nil {
		return nil, err
	}
	for _, k := range order {
		if err := checkBookSimKey(k, kv[k]); err != nil {
			return nil, err
		}
	}
	return translateBookSim(kv)
}

// lexBookSim splits the file into key/value pairs (the last assignment
// of a key wins, as in BookSim).
func lexBookSim(s string) (map[string]string, []string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], "//"):
			for i < len(s) && s[i] != '\n' {
				i++
			}
			b.WriteByte('\n')
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return nil, nil, fmt.Errorf("unterminated /* comment")
			}
			i += end + 3
			b.WriteByte(' ')
		default:
			b.WriteByte(s[i])
		}
	}
	kv := map[string]string{}
	var order []string
	sts := strings.Split(b.String(), ";")
	if last := strings.TrimSpace(sts[len(sts)-1]); last != "" {
		return nil, nil, fmt.Errorf("statement %q: missing ';'", firstLine(last))
	}
	for _, st := range sts {
		st = strings.TrimSpace(st)
		if st == "" {
			continue
		}
		k, v, ok := strings.Cut(st, "=")
		k, v = strings.TrimSpace(k), strings.Trim(strings.TrimSpace(v), `"`)
		if !ok || k == "" || strings.ContainsAny(k, " \t\n{}=") {
			return nil, nil, fmt.Errorf("statement %q: want key = value;", firstLine(st))
		}
		if strings.ContainsAny(v, "{}") {
			return nil, nil, fmt.Errorf("%s: vector values are not supported", k)
		}
		if _, seen := kv[k]; !seen {
			order = append(order, k)
		}
		kv[k] = v
	}
	return kv, order, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

// bookSimModelled are the keys translateBookSim reads.
var bookSimModelled = map[string]bool{
	"topology": true, "k": true, "n": true, "routing_function": true, "num_vcs": true,
	"vc_buf_size": true, "packet_size": true, "traffic": true, "injection_rate": true,
	"injection_rate_uses_flits": true, "routing_delay": true, "vc_alloc_delay": true,
	"sw_alloc_delay": true, "st_final_delay": true, "speculative": true, "vct": true,
	"use_noc_latency": true, "warmup_periods": true, "sample_period": true, "max_samples": true,
	"seed": true, "credit_delay": true, "wait_for_tail_credit": true, "input_speedup": true,
}

// checkBookSimKey refuses keys icn does not model.
func checkBookSimKey(k, v string) error {
	if bookSimModelled[k] || bookSimIgnored[k] {
		return nil
	}
	def, ok := bookSimNeutral[k]
	if !ok {
		return fmt.Errorf("BookSim key %q is not modelled by icn", k)
	}
	if v != def && !(isNumber(v) && isNumber(def) && num(v) == num(def)) {
		return fmt.Errorf("BookSim key %s = %s is not modelled by icn (only %s)", k, v, def)
	}
	return nil
}

func isNumber(s string) bool { _, err := strconv.ParseFloat(s, 64); return err == nil }

func num(s string) float64 { x, _ := strconv.ParseFloat(s, 64); return x }

// bookSimInt reads an integer key in lo..hi, or def when absent.
func bookSimInt(kv map[string]string, k string, def, lo, hi int) (int, error) {
	v, ok := kv[k]
	if !ok {
		return def, nil
	}
	x, err := strconv.Atoi(v)
	if err != nil || x < lo || x > hi {
		return 0, fmt.Errorf("BookSim key %s = %q: want a whole number in %d..%d", k, v, lo, hi)
	}
	return x, nil
}

// translateBookSim maps the modelled keys to icn's options.
func translateBookSim(kv map[string]string) (*BookSimFile, error) {
	out := &BookSimFile{Set: map[string]string{}}
	var err error
	ints := map[string]int{}
	for _, d := range []struct {
		k            string
		def, lo, max int
	}{
		{"k", 8, 2, 1 << 12}, {"n", 2, 1, 6}, {"num_vcs", 16, 1, 64}, {"vc_buf_size", 8, 1, 1 << 20},
		{"packet_size", 1, 1, MaxPacketFlits}, {"injection_rate_uses_flits", 0, 0, 1},
		{"routing_delay", 1, 0, 100}, {"vc_alloc_delay", 1, 0, 100}, {"sw_alloc_delay", 1, 0, 100},
		{"st_final_delay", 1, 0, 100}, {"speculative", 0, 0, 1}, {"vct", 0, 0, 1},
		{"use_noc_latency", 1, 0, 1}, {"warmup_periods", 3, 0, 1000}, {"sample_period", 1000, 1, MaxCycles},
		{"max_samples", 10, 1, 1000}, {"seed", 0, 0, math.MaxInt32},
		{"credit_delay", 0, 0, 1000}, {"wait_for_tail_credit", 0, 0, 1}, {"input_speedup", 1, 1, 64},
	} {
		if ints[d.k], err = bookSimInt(kv, d.k, d.def, d.lo, d.max); err != nil {
			return nil, err
		}
	}
	topo := kv["topology"]
	if out.Topo, err = bookSimTopo(topo, ints["k"], ints["n"]); err != nil {
		return nil, err
	}
	rf := kv["routing_function"]
	if rf == "" {
		rf = "dim_order"
	}
	if err := bookSimRouting(rf, topo); err != nil {
		return nil, err
	}
	out.Set["routing"] = RouteDOR
	tr := kv["traffic"]
	if tr == "" {
		tr = "uniform"
	}
	if out.Set["traffic"] = trafficOfBookSim(tr); out.Set["traffic"] == "" {
		return nil, fmt.Errorf("BookSim traffic %q is not modelled by icn", tr)
	}
	P := ints["packet_size"]
	out.Set["packet"] = strconv.Itoa(P)
	out.Set["vcs"] = strconv.Itoa(ints["num_vcs"])
	out.Set["buf"] = strconv.Itoa(ints["vc_buf_size"])
	if ints["vct"] == 1 {
		out.Set["switching"] = VCT
	}
	if r, ok := kv["injection_rate"]; ok {
		x, err := strconv.ParseFloat(r, 64)
		if err != nil || !(x > 0) {
			return nil, fmt.Errorf("BookSim injection_rate %q: want a positive number", r)
		}
		if ints["injection_rate_uses_flits"] == 0 {
			x *= float64(P) // packets per cycle → flits per cycle
		}
		if x > 1 {
			return nil, fmt.Errorf("BookSim injection_rate %q is above 1 flit per node and cycle", r)
		}
		out.Set["rate"] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	out.Set["router"] = RouterStaged
	out.Set["stages"] = fmt.Sprintf("%d,%d,%d,%d", ints["routing_delay"], ints["vc_alloc_delay"], ints["sw_alloc_delay"], ints["st_final_delay"])
	out.Set["speculative"] = strconv.FormatBool(ints["speculative"] == 1)
	out.Set["terminal-links"] = "true"
	if d := ints["credit_delay"]; d != 0 {
		out.Set["credit-delay"] = strconv.Itoa(d)
	}
	if ints["wait_for_tail_credit"] == 1 {
		out.Set["tail-credit"] = "true"
	}
	if s := ints["input_speedup"]; s != 1 {
		out.Set["input-speedup"] = strconv.Itoa(s)
	}
	out.Set["dateline"] = DatelineBookSim
	ll := 1
	if (topo == "torus" || topo == "") && ints["use_noc_latency"] == 1 {
		ll = 2 // BookSim's torus channels are longer for the wrap-around
	}
	out.Set["link-latency"] = strconv.Itoa(ll)
	S := ints["sample_period"]
	out.Set["warmup"] = strconv.Itoa(max(1, ints["warmup_periods"]*S))
	out.Set["cycles"] = strconv.Itoa(min(MaxCycles, ints["max_samples"]*S))
	out.Set["seed"] = strconv.Itoa(ints["seed"])
	return out, nil
}

// BookSim looks its routing function up as routing_function + "_" +
// topology in the table its routefunc.cpp fills; for meshes and tori these
// are the names, each with what it does. icn models dimension-order
// routing with BookSim's VC use (dim_order on both, and dor, BookSim's
// other name for dim_order_mesh); the rest route or use VCs otherwise.
var bookSimRoutingFunctions = map[string]string{
	"dim_order_mesh":      "",
	"dor_mesh":            "",
	"dim_order_torus":     "",
	"dim_order_ni_mesh":   "dimension order with each destination on its own VCs (non-interfering)",
	"dim_order_pni_mesh":  "dimension order with VCs split by destination (partially non-interfering)",
	"dim_order_ni_torus":  "dimension order with each destination on its own VCs (non-interfering)",
	"dim_order_bal_torus": "dimension order with datelines balanced across the VCs",
	"xy_yx_mesh":          "XY or YX chosen per packet",
	"adaptive_xy_yx_mesh": "XY or YX chosen adaptively",
	"romm_mesh":           "ROMM: two-phase through a random node in the minimal quadrant",
	"romm_ni_mesh":        "ROMM with non-interfering VCs",
	"min_adapt_mesh":      "minimal adaptive (BookSim's, not icn's Duato escape)",
	"min_adapt_torus":     "minimal adaptive (BookSim's, not icn's Duato escape)",
	"planar_adapt_mesh":   "planar adaptive",
	"valiant_mesh":        "Valiant through a random node",
	"valiant_torus":       "Valiant through a random node",
	"valiant_ni_torus":    "Valiant with non-interfering VCs",
	"chaos_mesh":          "chaotic (non-minimal, deflecting)",
	"chaos_torus":         "chaotic (non-minimal, deflecting)",
}

// bookSimRouting accepts routing_function rf on topology topo as BookSim
// would, if icn models it; otherwise it says why not.
func bookSimRouting(rf, topo string) error {
	if topo == "" {
		topo = "torus"
	}
	what, ok := bookSimRoutingFunctions[rf+"_"+topo]
	switch {
	case !ok:
		return fmt.Errorf("BookSim routing_function %s on a %s: BookSim has no %s_%s either", rf, topo, rf, topo)
	case what != "":
		return fmt.Errorf("BookSim routing_function %s (%s_%s: %s) is not modelled by icn (dim_order, or dor on a mesh)", rf, rf, topo, what)
	}
	return nil
}

// bookSimTopo returns the topology spec of a BookSim k-ary n-cube.
func bookSimTopo(topo string, k, n int) (string, error) {
	if topo == "" {
		topo = "torus"
	}
	if topo != "torus" && topo != "mesh" {
		return "", fmt.Errorf("BookSim topology %q is not modelled by icn (torus or mesh)", topo)
	}
	if math.Pow(float64(k), float64(n)) > 1<<22 {
		return "", fmt.Errorf("BookSim network %d^%d is too large", k, n)
	}
	dims := make([]string, n)
	for i := range dims {
		dims[i] = strconv.Itoa(k)
	}
	return topo + ":" + strings.Join(dims, "x"), nil
}

// Overlay gives set the topology ("topo") and then every translated
// option in Options' order, stopping at the first error; set decides
// what a value already given elsewhere (a command line) keeps.
func (b *BookSimFile) Overlay(set func(option, value string) error) error {
	if err := set("topo", b.Topo); err != nil {
		return err
	}
	for _, name := range b.Options() {
		if err := set(name, b.Set[name]); err != nil {
			return err
		}
	}
	return nil
}

// Options returns the translated options in a stable order.
func (b *BookSimFile) Options() []string {
	keys := make([]string, 0, len(b.Set))
	for k := range b.Set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

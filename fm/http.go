package fm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MaxBody is the largest request body accepted.
const MaxBody = 1 << 20

// HandlerOptions tune the HTTP API.
type HandlerOptions struct {
	// OpenRead lets GET requests through without the token.
	OpenRead bool
}

// apiHandler serves one API endpoint: the value to answer with and its
// status, or an error (mapped to a status by statusOf; errWritten when
// the handler wrote the answer itself).
type apiHandler func(w http.ResponseWriter, r *http.Request) (any, int, error)

type apiError struct {
	Error string `json:"error"`
}

// Handler returns the HTTP handler of the service: the JSON API under
// /api/, /healthz, /metrics, the OpenAPI document and the web page.
func (s *Service) Handler(o HandlerOptions) http.Handler {
	mux := http.NewServeMux()
	route := func(pattern string, write bool, h apiHandler) {
		name := pattern
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			code := s.serve(w, r, write, o, h)
			s.m.requests.WithLabelValues(name, strconv.Itoa(code)).Inc()
		})
	}
	for _, a := range []struct {
		pattern string
		write   bool // needs the token even with OpenRead
		h       apiHandler
	}{
		{"GET /api/fabric", false, s.handleFabric},
		{"GET /api/fabric/unicast", false, s.handleUnicast},
		{"GET /api/fabric/metrics", false, s.handleFabricMetrics},
		{"GET /api/fabric/load", false, s.handleLoad},
		{"POST /api/fabric/failures", true, s.handleFailure},
		{"GET /api/jobs", false, s.handleJobs},
		{"POST /api/jobs", true, s.handleSubmit},
		{"GET /api/jobs/{id}", false, s.handleJob},
		{"DELETE /api/jobs/{id}", true, s.handleRelease},
		{"GET /api/jobs/{id}/routes", false, s.handleRoutes},
		{"POST /api/jobs/{id}/verify", false, s.handleVerify},
		{"POST /api/jobs/{id}/migrate", true, s.handleMigrate},
		{"GET /api/mcast", false, s.handleGroups},
		{"GET /api/mcast/{group}", false, s.handleGroup},
		{"POST /api/mcast/join", true, s.handleJoin},
		{"POST /api/mcast/leave", true, s.handleLeave},
		{"GET /api/audit", false, s.handleAudit},
	} {
		route(a.pattern, a.write, a.h)
	}
	mux.HandleFunc("GET /api/backup", func(w http.ResponseWriter, r *http.Request) {
		code := s.serveBackup(w, r)
		s.m.requests.WithLabelValues("GET /api/backup", strconv.Itoa(code)).Inc()
	})
	mux.HandleFunc("GET /api/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(openAPI)
	})
	mux.HandleFunc("GET /healthz", s.handleHealth)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{}))
	web := webHandler()
	mux.Handle("GET /{$}", web)
	mux.Handle("GET /index.html", web)
	mux.Handle("GET /static/", web)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		if allow := allowed(mux, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeJSON(w, http.StatusMethodNotAllowed, apiError{fmt.Sprintf("method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", "))})
			return
		}
		writeJSON(w, http.StatusNotFound, apiError{fmt.Sprintf("no API endpoint %s %s", r.Method, r.URL.Path)})
	})
	return mux
}

// handleFabric serves GET /api/fabric.
func (s *Service) handleFabric(w http.ResponseWriter, r *http.Request) (any, int, error) {
	// The answer's bytes are kept per version of the fabric and the
	// jobs (32 768 nodes and 98 304 links take tens of ms to encode).
	data := s.fabricJSON()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	w.Write(data)
	return nil, http.StatusOK, errWritten
}

// handleUnicast serves GET /api/fabric/unicast.
func (s *Service) handleUnicast(w http.ResponseWriter, r *http.Request) (any, int, error) {
	u := s.Unicast()
	if u == nil {
		return nil, 0, fmt.Errorf("%w: this service keeps no unicast tables (icn serve --engine E --lft-out FILE)", ErrNotFound)
	}
	return u, 200, nil
}

// handleFabricMetrics serves GET /api/fabric/metrics.
func (s *Service) handleFabricMetrics(w http.ResponseWriter, r *http.Request) (any, int, error) {
	return s.Metrics(), 200, nil
}

// handleLoad serves GET /api/fabric/load.
func (s *Service) handleLoad(w http.ResponseWriter, r *http.Request) (any, int, error) {
	data := s.loadJSON()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	w.Write(data)
	return nil, http.StatusOK, errWritten
}

// loadJSON is the encoded answer of GET /api/fabric/load (as writeJSON
// encodes it), kept while the jobs' link loads (their version) and the
// multicast EFI stay the same: a 32 768-node torus's answer takes ms to
// encode.
func (s *Service) loadJSON() []byte {
	e := s.loadsEntry()
	efi := s.mc.linkEFI()
	s.reads.mu.Lock()
	c := s.reads.loadAnswer
	s.reads.mu.Unlock()
	if c != nil && c.loads == e && slices.Equal(c.efi, efi) {
		return c.data
	}
	data := appendLoadsJSON(nil, e.value.([]int), efi)
	s.reads.mu.Lock()
	s.reads.loadAnswer = &loadAnswer{loads: e, efi: efi, data: data}
	s.reads.mu.Unlock()
	return data
}

// appendLoadsJSON appends GET /api/fabric/load's answer as encodeJSON
// writes map[string]any{"routes": routes, "efi": efi}: keys in order,
// indented one space a level up to indentLimit bytes compact, then a
// newline.
func appendLoadsJSON(b []byte, routes, efi []int) []byte {
	compact := len(`{"efi":[],"routes":[]}`)
	for _, list := range [2][]int{efi, routes} {
		if list == nil {
			compact += 2 // null for []
		}
		for i, x := range list {
			if i > 0 {
				compact++
			}
			compact += len(strconv.AppendInt(make([]byte, 0, 20), int64(x), 10))
		}
	}
	indent := compact <= indentLimit
	sep, open, next, end := ",", "[", ",", "]"
	if indent {
		open, next, end = "[\n  ", ",\n  ", "\n ]"
	}
	if b == nil {
		b = make([]byte, 0, compact+3*(len(routes)+len(efi))+32)
	}
	for k, kv := range [2]struct {
		key  string
		list []int
	}{{"efi", efi}, {"routes", routes}} {
		switch {
		case k > 0:
			b = append(b, sep...)
			if indent {
				b = append(b, "\n "...)
			}
		case indent:
			b = append(b, "{\n "...)
		default:
			b = append(b, '{')
		}
		b = append(b, '"')
		b = append(b, kv.key...)
		b = append(b, `":`...)
		if indent {
			b = append(b, ' ')
		}
		if kv.list == nil {
			b = append(b, "null"...)
			continue
		}
		if len(kv.list) == 0 {
			b = append(b, "[]"...)
			continue
		}
		b = append(b, open...)
		for i, x := range kv.list {
			if i > 0 {
				b = append(b, next...)
			}
			b = strconv.AppendInt(b, int64(x), 10)
		}
		b = append(b, end...)
	}
	if indent {
		b = append(b, '\n')
	}
	return append(b, "}\n"...)
}

// loadAnswer is an encoded answer of GET /api/fabric/load and what it
// was encoded from.
type loadAnswer struct {
	loads *readEntry // the jobs' loads (readCache.loads)
	efi   []int
	data  []byte
}

// handleFailure serves POST /api/fabric/failures.
func (s *Service) handleFailure(w http.ResponseWriter, r *http.Request) (any, int, error) {
	var ch FailureChange
	if err := decode(r, &ch); err != nil {
		return nil, 0, err
	}
	res, err := s.ChangeFailure(r.Context(), actor(r), ch)
	return res, 200, err
}

// handleJobs serves GET /api/jobs.
func (s *Service) handleJobs(w http.ResponseWriter, r *http.Request) (any, int, error) {
	if r.URL.Query().Get("all") != "1" {
		// The running jobs' answer is kept per version of the jobs
		// (hundreds of jobs take ms to encode).
		data := s.jobsJSON()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		w.Write(data)
		return nil, http.StatusOK, errWritten
	}
	jobs, err := s.Jobs(true)
	if jobs == nil {
		jobs = []*JobRecord{}
	}
	return jobs, 200, err
}

// jobsJSON is the encoded answer of GET /api/jobs (the running jobs, as
// writeJSON encodes them), computed once per version of the jobs.
func (s *Service) jobsJSON() []byte {
	e := s.readEntry(&s.reads.jobs, true)
	e.once.Do(func() {
		jobs, _ := s.Jobs(false) // (no error without all)
		data, err := encodeJSON(jobs)
		if err != nil {
			data = fmt.Appendf(nil, "{\"error\":%q}\n", err.Error())
		}
		e.value = data
	})
	return e.value.([]byte)
}

// handleSubmit serves POST /api/jobs.
func (s *Service) handleSubmit(w http.ResponseWriter, r *http.Request) (any, int, error) {
	var req JobRequest
	if err := decode(r, &req); err != nil {
		return nil, 0, err
	}
	j, err := s.SubmitContext(r.Context(), actor(r), req)
	if j != nil {
		// The placement and the table's figures: the table itself,
		// millions of routes for large jobs, comes from
		// GET /api/jobs/{id}/routes.
		c := *j
		c.Table = nil
		j = &c
	}
	return j, 201, err
}

// handleJob serves GET /api/jobs/{id}.
func (s *Service) handleJob(w http.ResponseWriter, r *http.Request) (any, int, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, 0, err
	}
	j, err := s.Job(id)
	return j, 200, err
}

// handleRelease serves DELETE /api/jobs/{id}.
func (s *Service) handleRelease(w http.ResponseWriter, r *http.Request) (any, int, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, 0, err
	}
	j, err := s.ReleaseContext(r.Context(), actor(r), id)
	return j, 200, err
}

// handleRoutes serves GET /api/jobs/{id}/routes.
func (s *Service) handleRoutes(w http.ResponseWriter, r *http.Request) (any, int, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, 0, err
	}
	j, err := s.Job(id)
	if err != nil {
		return nil, 0, err
	}
	if j.Table == nil {
		return nil, 0, fmt.Errorf("%w: job %d has no routing table", ErrNotFound, id)
	}
	switch f := r.URL.Query().Get("format"); f {
	case "", "json":
		return j.Table, 200, nil
	case "routes":
		// The compact route file (icn route --format routes), streamed;
		// icn route check reads it. The table is checked before the
		// first byte, so an error still gets its status.
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="job-%d.routes"`, id))
		if err := routing.WriteRoutesJSON(w, j.Table); err != nil {
			return nil, 0, fmt.Errorf("job %d: %v", id, err)
		}
		return nil, 200, errWritten
	default:
		return nil, 0, badRequest("format %q: want json or routes", f)
	}
}

// handleVerify serves POST /api/jobs/{id}/verify.
func (s *Service) handleVerify(w http.ResponseWriter, r *http.Request) (any, int, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, 0, err
	}
	ok, problem, err := s.VerifyJob(id)
	return map[string]any{"id": id, "ok": ok, "problem": problem}, 200, err
}

// handleMigrate serves POST /api/jobs/{id}/migrate.
func (s *Service) handleMigrate(w http.ResponseWriter, r *http.Request) (any, int, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, 0, err
	}
	j, err := s.MigrateContext(r.Context(), actor(r), id)
	if j != nil {
		j.Table = nil
	}
	return j, 200, err
}

// handleGroups serves GET /api/mcast.
func (s *Service) handleGroups(w http.ResponseWriter, r *http.Request) (any, int, error) {
	return s.mc.list(), 200, nil
}

// handleGroup serves GET /api/mcast/{group}.
func (s *Service) handleGroup(w http.ResponseWriter, r *http.Request) (any, int, error) {
	g, err := s.mc.get(r.PathValue("group"))
	return g, 200, err
}

// handleJoin serves POST /api/mcast/join.
func (s *Service) handleJoin(w http.ResponseWriter, r *http.Request) (any, int, error) {
	var req McastRequest
	if err := decode(r, &req); err != nil {
		return nil, 0, err
	}
	res, err := s.mc.join(r.Context(), actor(r), req)
	return res, 200, err
}

// handleLeave serves POST /api/mcast/leave.
func (s *Service) handleLeave(w http.ResponseWriter, r *http.Request) (any, int, error) {
	var req McastRequest
	if err := decode(r, &req); err != nil {
		return nil, 0, err
	}
	res, err := s.mc.leave(r.Context(), actor(r), req)
	return res, 200, err
}

// handleAudit serves GET /api/audit.
func (s *Service) handleAudit(w http.ResponseWriter, r *http.Request) (any, int, error) {
	after, limit, err := auditQuery(r)
	if err != nil {
		return nil, 0, err
	}
	ev, err := s.Audit(after, limit)
	return ev, 200, err
}

// handleHealth serves GET /healthz: ok while the store reads.
func (s *Service) handleHealth(w http.ResponseWriter, r *http.Request) {
	err := s.store.View(func(tx *Tx) error { _, _, err := tx.Fabric(); return err })
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		json.NewEncoder(w).Encode(map[string]any{"status": "unhealthy", "error": err.Error()})
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"status": "ok"})
}

// serve runs one API handler: auth, size limit, error mapping. It returns
// the status code written.
func (s *Service) serve(w http.ResponseWriter, r *http.Request, write bool, o HandlerOptions, h apiHandler) (code int) {
	defer func() {
		if p := recover(); p != nil {
			code = http.StatusInternalServerError
			writeJSON(w, code, apiError{fmt.Sprintf("internal error: %v", p)})
		}
	}()
	if (write || !o.OpenRead) && !s.Authorized(r.Header.Get("Authorization")) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="icn"`)
		writeJSON(w, http.StatusUnauthorized, apiError{"missing or wrong bearer token (see the .token file next to the database)"})
		return http.StatusUnauthorized
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
	w = writeDeadlines(w)
	v, code, err := h(w, r)
	if errors.Is(err, errWritten) {
		return code
	}
	if err != nil {
		code = statusOf(err)
		writeJSON(w, code, apiError{err.Error()})
		return code
	}
	writeJSON(w, code, v)
	return code
}

// serveBackup streams a consistent copy of the database (always behind
// the token: the copy holds everything, the token hash included).
func (s *Service) serveBackup(w http.ResponseWriter, r *http.Request) int {
	if !s.Authorized(r.Header.Get("Authorization")) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="icn"`)
		writeJSON(w, http.StatusUnauthorized, apiError{"missing or wrong bearer token (see the .token file next to the database)"})
		return http.StatusUnauthorized
	}
	w = writeDeadlines(w)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="icn-backup.db"`)
	started := false
	_, err := s.store.Backup(w, func(size int64) {
		started = true
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	})
	if err != nil && !started {
		writeJSON(w, http.StatusServiceUnavailable, apiError{"storage: " + err.Error()})
		return http.StatusServiceUnavailable
	}
	if err != nil {
		// Headers are gone; abort the connection so the client sees a
		// short (hence failed) copy.
		panic(http.ErrAbortHandler)
	}
	return http.StatusOK
}

func statusOf(err error) int {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, ErrTimeout):
		return http.StatusRequestTimeout
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrConflict), errors.Is(err, ErrBudget):
		// Not now (no room, or not within the placement budget): the
		// request is refused, the service is fine.
		return http.StatusConflict
	case errors.Is(err, ErrClosing):
		return http.StatusServiceUnavailable
	case errors.Is(err, context.Canceled):
		return 499 // the client closed the request (nginx's code); nobody reads it
	case strings.HasPrefix(err.Error(), "storage:"):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// indentLimit is the size up to which answers are indented; larger ones
// (a job with a million routes) are sent compact: indenting them costs
// seconds and gigabytes for whitespace.
const indentLimit = 1 << 20

// fabricJSON is the encoded answer of GET /api/fabric for the current
// fabric and jobs, computed once per version of them: assembled from the
// nodes' and links' pieces encoded once (fabricPieces), with the jobs and
// failure flags of the version; the bytes are those of
// encodeJSON(s.Fabric()).
func (s *Service) fabricJSON() []byte {
	e := s.readEntry(&s.reads.fabric, true)
	e.once.Do(func() {
		s.mu.RLock()
		g, state := s.g, s.state
		if state != nil {
			state = state.Clone()
		}
		head := FabricView{Spec: s.fabric.Spec, Dims: g.Dims(), FailedLinks: slices.Clone(s.fabric.FailedLinks),
			FailedNodes: slices.Clone(s.fabric.FailedNodes), Rules: s.rules(), Jobs: s.noJobs == "", NoJobs: s.noJobs}
		s.mu.RUnlock()
		s.piecesOnce.Do(func() { s.pieces = newFabricPieces(g) })
		data, err := s.pieces.appendJSON(nil, &head, g, state)
		if err == nil && len(data) <= indentLimit {
			var buf bytes.Buffer
			if json.Indent(&buf, data, "", " ") == nil {
				data = buf.Bytes()
			}
		}
		if err != nil {
			data = fmt.Appendf(nil, "{\"error\":%q}", err.Error())
		}
		e.value = append(data, '\n')
	})
	return e.value.([]byte)
}

// fabricPieces are the parts of GET /api/fabric's answer that neither
// failures nor jobs change, encoded once: per node its JSON up to its
// coordinates (head) and from its level on (tail), per link up to its
// dimension; between them go the version's "failed" and "job" fields.
type fabricPieces struct {
	nodes  []byte
	nodeAt []int32 // node v: head nodes[nodeAt[2v]:nodeAt[2v+1]], tail up to nodeAt[2v+2]
	links  []byte
	linkAt []int32 // link l: links[linkAt[l]:linkAt[l+1]]
}

// jsonString appends s as encoding/json writes a string.
func jsonString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

func newFabricPieces(g *topology.Graph) *fabricPieces {
	p := &fabricPieces{nodeAt: make([]int32, 0, 2*g.NumNodes()+1), linkAt: make([]int32, 0, g.NumLinks()+1)}
	kinds := map[topology.Kind][]byte{}
	for v := range g.NumNodes() {
		p.nodeAt = append(p.nodeAt, int32(len(p.nodes)))
		b := append(p.nodes, `{"id":`...)
		b = strconv.AppendInt(b, int64(v), 10)
		b = jsonString(append(b, `,"name":`...), g.NodeName(v))
		k, ok := kinds[g.Kind(v)]
		if !ok {
			k = jsonString(nil, g.Kind(v).String())
			kinds[g.Kind(v)] = k
		}
		b = append(append(b, `,"kind":`...), k...)
		if g.HasCoords() && len(g.Dims()) > 0 {
			b = append(b, `,"coord":[`...)
			for i := range g.Dims() {
				if i > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, int64(g.CoordAt(v, i)), 10)
			}
			b = append(b, ']')
		}
		p.nodeAt = append(p.nodeAt, int32(len(b)))
		if l := g.Level(v); l >= 0 {
			b = strconv.AppendInt(append(b, `,"level":`...), int64(l), 10)
		}
		if gr := g.Group(v); gr >= 0 {
			b = strconv.AppendInt(append(b, `,"group":`...), int64(gr), 10)
		}
		p.nodes = append(b, '}')
	}
	p.nodeAt = append(p.nodeAt, int32(len(p.nodes)))
	for l := range g.NumLinks() {
		p.linkAt = append(p.linkAt, int32(len(p.links)))
		lk := g.Link(l)
		b := strconv.AppendInt(append(p.links, `{"id":`...), int64(l), 10)
		b = jsonString(append(b, `,"name":`...), g.LinkName(l))
		b = strconv.AppendInt(append(b, `,"a":`...), int64(lk.A), 10)
		b = strconv.AppendInt(append(b, `,"b":`...), int64(lk.B), 10)
		p.links = strconv.AppendInt(append(b, `,"dim":`...), int64(lk.Dim), 10)
	}
	p.linkAt = append(p.linkAt, int32(len(p.links)))
	return p
}

// appendJSON appends the compact JSON of the fabric view head (its nodes
// and links left out) with the nodes and links of g, the jobs holding
// them in state (nil: none), as encoding/json writes FabricView.
func (p *fabricPieces) appendJSON(b []byte, head *FabricView, g *topology.Graph, state *alloc.State) ([]byte, error) {
	if len(p.nodeAt) != 2*g.NumNodes()+1 || len(p.linkAt) != g.NumLinks()+1 {
		return nil, fmt.Errorf("internal error: the fabric's encoded pieces are of another fabric")
	}
	if b == nil {
		b = make([]byte, 0, len(p.nodes)+len(p.links)+16*g.NumLinks()/8+32*g.NumNodes()/8+4096)
	}
	b = jsonString(append(b, `{"spec":`...), head.Spec)
	if len(head.Dims) > 0 {
		b = append(b, `,"dims":[`...)
		for i, d := range head.Dims {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(d), 10)
		}
		b = append(b, ']')
	}
	b = append(b, `,"nodes":[`...)
	for v := range g.NumNodes() {
		if v > 0 {
			b = append(b, ',')
		}
		b = append(b, p.nodes[p.nodeAt[2*v]:p.nodeAt[2*v+1]]...)
		if g.NodeFailed(v) {
			b = append(b, `,"failed":true`...)
		}
		if state != nil {
			if j := state.Owner(v); j != 0 {
				b = strconv.AppendInt(append(b, `,"job":`...), int64(j), 10)
			}
		}
		b = append(b, p.nodes[p.nodeAt[2*v+1]:p.nodeAt[2*v+2]]...)
	}
	b = append(b, `],"links":[`...)
	for l := range g.NumLinks() {
		if l > 0 {
			b = append(b, ',')
		}
		b = append(b, p.links[p.linkAt[l]:p.linkAt[l+1]]...)
		if g.LinkFailed(l) {
			b = append(b, `,"failed":true`...)
		}
		b = append(b, '}')
	}
	b = append(b, `],"failed_links":`...)
	for i, list := range [2][]string{head.FailedLinks, head.FailedNodes} {
		if i == 1 {
			b = append(b, `,"failed_nodes":`...)
		}
		if list == nil {
			list = []string{}
		}
		q, err := json.Marshal(list)
		if err != nil {
			return nil, err
		}
		b = append(b, q...)
	}
	b = jsonString(append(b, `,"rules":`...), head.Rules)
	b = strconv.AppendBool(append(b, `,"jobs":`...), head.Jobs)
	if head.NoJobs != "" {
		b = jsonString(append(b, `,"no_jobs":`...), head.NoJobs)
	}
	return append(b, '}'), nil
}

// encodeJSON encodes an answer as writeJSON sends it: indented up to
// indentLimit, with a final newline.
func encodeJSON(v any) ([]byte, error) {
	data, err := marshalJSON(v)
	if err != nil {
		return nil, err
	}
	if len(data) <= indentLimit {
		var buf bytes.Buffer
		if json.Indent(&buf, data, "", " ") == nil {
			data = buf.Bytes()
		}
	}
	return append(data, '\n'), nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	if largeTable(v, indentLimit) != nil {
		err := streamJSON(w, v, func() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
		})
		if err == nil {
			return
		}
		v, code = map[string]string{"error": err.Error()}, http.StatusInternalServerError
	}
	data, err := encodeJSON(v)
	if err != nil {
		code = http.StatusInternalServerError
		data = fmt.Appendf(nil, "{\"error\":%q}\n", err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(code)
	w.Write(data)
}

// decode reads one JSON object, rejecting unknown fields, keys that
// differ from the documented ones only in case, duplicate keys and
// trailing data.
func decode(r *http.Request, v any) error {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &mbe):
			return err // 413
		case errors.As(err, &ne) && ne.Timeout():
			return fmt.Errorf("%w: the request body did not arrive in time (%d bytes received)", ErrTimeout, len(data))
		case errors.Is(err, io.ErrUnexpectedEOF):
			return badRequest("request body truncated: %d of the %d bytes announced arrived", len(data), r.ContentLength)
		default:
			return badRequest("cannot read the request body: %v", err)
		}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return badRequest("empty request body (want a JSON object)")
	}
	if err := checkKeys(data, v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("malformed JSON: %v", err)
	}
	if dec.More() {
		return badRequest("trailing data after the JSON object")
	}
	return nil
}

// checkKeys checks the top-level keys of a JSON object against the json
// tags of v's struct type: exact spelling, each at most once.
func checkKeys(data []byte, v any) error {
	want := map[string]bool{}
	t := reflect.TypeOf(v).Elem()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			want[name] = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return badRequest("malformed JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return badRequest("want a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return badRequest("malformed JSON: %v", err)
		}
		key, _ := tok.(string)
		if !want[key] {
			return badRequest("unknown field %q", key)
		}
		if seen[key] {
			return badRequest("field %q given twice", key)
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return badRequest("malformed JSON: %v", err)
		}
	}
	return nil
}

// allowed lists the methods that have a handler for the request's path
// (other than the catch-all).
func allowed(mux *http.ServeMux, r *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" && pattern != "/api/" {
			out = append(out, m)
		}
	}
	return out
}

// auditQuery parses ?after= and ?limit= (absent means 0).
func auditQuery(r *http.Request) (after uint64, limit int, err error) {
	q := r.URL.Query()
	if v := q.Get("after"); v != "" {
		if after, err = strconv.ParseUint(v, 10, 64); err != nil {
			return 0, 0, badRequest("after=%q is not a sequence number", v)
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 {
			return 0, 0, badRequest("limit=%q is not a positive number", v)
		}
	}
	return after, limit, nil
}

func pathID(r *http.Request) (int, error) {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil || id < 1 {
		return 0, badRequest("job id %q is not a positive number", r.PathValue("id"))
	}
	return id, nil
}

func actor(r *http.Request) string {
	if a := r.Header.Get("X-ICN-Actor"); a != "" && len(a) <= 64 {
		return a
	}
	return "api@" + r.RemoteAddr
}

// RunTicker calls Tick every interval until stop is closed or the
// service closes.
func (s *Service) RunTicker(interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	closing := s.closing()
	for {
		select {
		case <-stop:
			return
		case <-closing:
			return
		case <-t.C:
			s.Tick()
		}
	}
}

// ErrTimeout marks requests whose body did not arrive within the
// server's read timeout (408).
var ErrTimeout = errors.New("request timeout")

// writeWindow is how long one write of an answer may wait for the client
// to read: a client that stops reading a large answer (a job's table, a
// backup) for that long is dropped instead of holding the answer's memory
// and goroutine for ever.
const writeWindow = 30 * time.Second

// deadlineWriter gives every write of an answer its own deadline.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
}

func writeDeadlines(w http.ResponseWriter) http.ResponseWriter {
	return &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w)}
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.rc.SetWriteDeadline(time.Now().Add(writeWindow)) // not supported by test recorders: no deadline then
	return d.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// errWritten tells serve that the handler wrote its answer itself.
var errWritten = errors.New("answer written")

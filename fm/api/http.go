package api

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/routing"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Backend is what the HTTP API needs of the fabric manager
// (fm.Service implements it).
type Backend interface {
	FabricJSON() []byte
	// FabricGridJSON is GET /api/fabric?compact=1 (client.FabricGrid on
	// a plain grid, else FabricJSON's answer).
	FabricGridJSON() []byte
	Unicast() *client.UnicastStatus
	Metrics() client.MetricsView
	LoadsJSON() []byte
	ChangeFailure(ctx context.Context, actor string, ch client.FailureChange) (*client.FailureResult, error)
	JobsJSON() []byte
	Jobs(all bool) ([]*client.JobRecord, error)
	SubmitContext(ctx context.Context, actor string, req client.JobRequest) (*client.JobRecord, error)
	Job(id int) (*client.JobRecord, error)
	ReleaseContext(ctx context.Context, actor string, id int) (*client.JobRecord, error)
	VerifyJob(id int) (ok bool, problem string, err error)
	MigrateContext(ctx context.Context, actor string, id int) (*client.JobRecord, error)
	Groups() []client.GroupRecord
	Group(id string) (*client.GroupRecord, error)
	Join(ctx context.Context, actor string, req client.McastRequest) (*client.GroupRecord, error)
	Leave(ctx context.Context, actor string, req client.McastRequest) (*client.GroupRecord, error)
	Audit(after uint64, limit int) ([]client.Event, error)
	// Health says whether the instance serves, its role and the leader.
	Health() client.Health
	Authorized(header string) bool
	// Backup writes a consistent copy of the store (a bbolt store only).
	Backup(w io.Writer, size func(int64)) (int64, error)
	Stats() client.ServiceStats
	// ObserveAllocations has fn called with the time of every node
	// selection and whether the placement budget cut it short.
	ObserveAllocations(fn func(seconds float64, cut bool))
}

// MaxBody is the largest request body accepted.
const MaxBody = 1 << 20

// Options tune the HTTP API.
type Options struct {
	// OpenRead lets GET requests through without the token.
	OpenRead bool
}

// API is the fabric manager's HTTP interface: the JSON API under /api/,
// /healthz, /metrics, the OpenAPI document and the web page.
//
// An instance that does not lead a replicated store answers reads from
// its own state (headers X-ICN-Role, X-ICN-Revision, and X-ICN-Stale when
// it could not reach the store lately) and answers a change with 307 to
// the leader (headers Location and X-ICN-Leader), or 503 with Retry-After
// while no leader is known.
type API struct {
	svc Backend
	o   Options
	m   *metrics
	mux *http.ServeMux
	// gz keeps the entity tag and gzip form of the latest kept answer of
	// each endpoint (writeKept).
	gzMu sync.Mutex
	gz   map[string]*keptAnswer
}

// apiHandler serves one API endpoint: the value to answer with and its
// status, or an error (mapped to a status by StatusOf; errWritten when
// the handler wrote the answer itself).
type apiHandler func(w http.ResponseWriter, r *http.Request) (any, int, error)

type apiError struct {
	Error string `json:"error"`
	// Kind is the kind of error (client.KindBudget, …): the status
	// alone does not tell a budget too short from a conflict.
	Kind string `json:"kind,omitempty"`
	// Leader is where a change refused by a standby goes.
	Leader string `json:"leader,omitempty"`
}

// New builds the HTTP API of a fabric manager.
func New(svc Backend, o Options) *API {
	a := &API{svc: svc, o: o, mux: http.NewServeMux(), gz: map[string]*keptAnswer{}}
	if w, ok := svc.(keptWarmer); ok {
		w.OnKept(a.warmKept)
	}
	a.m = newMetrics(svc)
	svc.ObserveAllocations(func(seconds float64, cut bool) {
		a.m.allocation.Observe(seconds)
		if cut {
			a.m.allocationCut.Inc()
		}
	})
	mux := a.mux
	route := func(pattern string, write bool, h apiHandler) {
		name := pattern
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			code := a.serve(w, r, write, h)
			a.m.requests.WithLabelValues(name, strconv.Itoa(code)).Inc()
		})
	}
	for _, e := range []struct {
		pattern string
		write   bool // needs the token even with OpenRead
		h       apiHandler
	}{
		{"GET /api/fabric", false, a.handleFabric},
		{"GET /api/fabric/unicast", false, a.handleUnicast},
		{"GET /api/fabric/metrics", false, a.handleFabricMetrics},
		{"GET /api/fabric/load", false, a.handleLoad},
		{"POST /api/fabric/failures", true, a.handleFailure},
		{"GET /api/jobs", false, a.handleJobs},
		{"POST /api/jobs", true, a.handleSubmit},
		{"GET /api/jobs/{id}", false, a.handleJob},
		{"DELETE /api/jobs/{id}", true, a.handleRelease},
		{"GET /api/jobs/{id}/routes", false, a.handleRoutes},
		{"POST /api/jobs/{id}/verify", false, a.handleVerify},
		{"POST /api/jobs/{id}/migrate", true, a.handleMigrate},
		{"GET /api/mcast", false, a.handleGroups},
		{"GET /api/mcast/{group}", false, a.handleGroup},
		{"POST /api/mcast/join", true, a.handleJoin},
		{"POST /api/mcast/leave", true, a.handleLeave},
		{"GET /api/audit", false, a.handleAudit},
	} {
		route(e.pattern, e.write, e.h)
	}
	mux.HandleFunc("GET /api/backup", func(w http.ResponseWriter, r *http.Request) {
		code := a.serveBackup(w, r)
		a.m.requests.WithLabelValues("GET /api/backup", strconv.Itoa(code)).Inc()
	})
	mux.HandleFunc("GET /api/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(openAPI)
	})
	mux.HandleFunc("GET /healthz", a.handleHealth)
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.m.reg, promhttp.HandlerOpts{}))
	web := webHandler()
	mux.Handle("GET /{$}", web)
	mux.Handle("GET /index.html", web)
	mux.Handle("GET /static/", web)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		if allow := allowed(mux, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeJSON(w, http.StatusMethodNotAllowed, apiError{Error: fmt.Sprintf("method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", "))})
			return
		}
		writeJSON(w, http.StatusNotFound, apiError{Error: fmt.Sprintf("no API endpoint %s %s", r.Method, r.URL.Path)})
	})
	return a
}

// ServeHTTP serves the API.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// handleFabric serves GET /api/fabric.
func (a *API) handleFabric(w http.ResponseWriter, r *http.Request) (any, int, error) {
	// The answer's bytes are kept per version of the fabric and the
	// jobs (32 768 nodes and 98 304 links take tens of ms to encode).
	var data []byte
	if r.URL.Query().Get("compact") == "1" {
		// The web page's form: a torus's node and link lists follow
		// from its sizes (98 304 nodes: 0.3 MB instead of 38 MB).
		data = a.svc.FabricGridJSON()
	} else {
		data = a.svc.FabricJSON()
	}
	a.writeKept(w, r, "fabric?compact="+r.URL.Query().Get("compact"), data)
	return nil, http.StatusOK, errWritten
}

// handleUnicast serves GET /api/fabric/unicast.
func (a *API) handleUnicast(w http.ResponseWriter, r *http.Request) (any, int, error) {
	u := a.svc.Unicast()
	if u == nil {
		return nil, 0, fmt.Errorf("%w: this service keeps no unicast tables (icn serve --engine E --lft-out FILE)", client.ErrNotFound)
	}
	return u, 200, nil
}

// handleFabricMetrics serves GET /api/fabric/metrics.
func (a *API) handleFabricMetrics(w http.ResponseWriter, r *http.Request) (any, int, error) {
	return a.svc.Metrics(), 200, nil
}

// handleLoad serves GET /api/fabric/load.
func (a *API) handleLoad(w http.ResponseWriter, r *http.Request) (any, int, error) {
	a.writeKept(w, r, "load", a.svc.LoadsJSON())
	return nil, http.StatusOK, errWritten
}

// handleFailure serves POST /api/fabric/failures.
func (a *API) handleFailure(w http.ResponseWriter, r *http.Request) (any, int, error) {
	var ch client.FailureChange
	if err := decode(r, &ch); err != nil {
		return nil, 0, err
	}
	res, err := a.svc.ChangeFailure(r.Context(), actor(r), ch)
	return res, 200, err
}

// handleJobs serves GET /api/jobs.
func (a *API) handleJobs(w http.ResponseWriter, r *http.Request) (any, int, error) {
	if r.URL.Query().Get("all") != "1" {
		// The running jobs' answer is kept per version of the jobs
		// (hundreds of jobs take ms to encode).
		a.writeKept(w, r, "jobs", a.svc.JobsJSON())
		return nil, http.StatusOK, errWritten
	}
	jobs, err := a.svc.Jobs(true)
	if jobs == nil {
		jobs = []*client.JobRecord{}
	}
	return jobs, 200, err
}

// handleSubmit serves POST /api/jobs.
func (a *API) handleSubmit(w http.ResponseWriter, r *http.Request) (any, int, error) {
	var req client.JobRequest
	if err := decode(r, &req); err != nil {
		return nil, 0, err
	}
	j, err := a.svc.SubmitContext(r.Context(), actor(r), req)
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
func (a *API) handleJob(w http.ResponseWriter, r *http.Request) (any, int, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, 0, err
	}
	j, err := a.svc.Job(id)
	return j, 200, err
}

// handleRelease serves DELETE /api/jobs/{id}.
func (a *API) handleRelease(w http.ResponseWriter, r *http.Request) (any, int, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, 0, err
	}
	j, err := a.svc.ReleaseContext(r.Context(), actor(r), id)
	return j, 200, err
}

// handleRoutes serves GET /api/jobs/{id}/routes.
func (a *API) handleRoutes(w http.ResponseWriter, r *http.Request) (any, int, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, 0, err
	}
	j, err := a.svc.Job(id)
	if err != nil {
		return nil, 0, err
	}
	if j.Table == nil && j.Routing == client.RoutePending {
		return nil, 0, fmt.Errorf("%w: job %d's routing table is pending: it is being built and verified after the placement; ask again once its routing is no longer pending", client.ErrConflict, id)
	}
	if j.Table == nil {
		return nil, 0, fmt.Errorf("%w: job %d has no routing table", client.ErrNotFound, id)
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
		return nil, 0, fmt.Errorf("%w: format %q: want json or routes", client.ErrBadRequest, f)
	}
}

// handleVerify serves POST /api/jobs/{id}/verify.
func (a *API) handleVerify(w http.ResponseWriter, r *http.Request) (any, int, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, 0, err
	}
	ok, problem, err := a.svc.VerifyJob(id)
	return client.VerifyResult{ID: id, OK: ok, Problem: problem}, 200, err
}

// handleMigrate serves POST /api/jobs/{id}/migrate.
func (a *API) handleMigrate(w http.ResponseWriter, r *http.Request) (any, int, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, 0, err
	}
	j, err := a.svc.MigrateContext(r.Context(), actor(r), id)
	if j != nil {
		// (a copy: the record may be the service's own)
		c := *j
		c.Table = nil
		j = &c
	}
	return j, 200, err
}

// handleGroups serves GET /api/mcast.
func (a *API) handleGroups(w http.ResponseWriter, r *http.Request) (any, int, error) {
	return a.svc.Groups(), 200, nil
}

// handleGroup serves GET /api/mcast/{group}.
func (a *API) handleGroup(w http.ResponseWriter, r *http.Request) (any, int, error) {
	g, err := a.svc.Group(r.PathValue("group"))
	return g, 200, err
}

// handleJoin serves POST /api/mcast/join.
func (a *API) handleJoin(w http.ResponseWriter, r *http.Request) (any, int, error) {
	var req client.McastRequest
	if err := decode(r, &req); err != nil {
		return nil, 0, err
	}
	res, err := a.svc.Join(r.Context(), actor(r), req)
	return res, 200, err
}

// handleLeave serves POST /api/mcast/leave.
func (a *API) handleLeave(w http.ResponseWriter, r *http.Request) (any, int, error) {
	var req client.McastRequest
	if err := decode(r, &req); err != nil {
		return nil, 0, err
	}
	res, err := a.svc.Leave(r.Context(), actor(r), req)
	return res, 200, err
}

// handleAudit serves GET /api/audit.
func (a *API) handleAudit(w http.ResponseWriter, r *http.Request) (any, int, error) {
	after, limit, err := auditQuery(r)
	if err != nil {
		return nil, 0, err
	}
	ev, err := a.svc.Audit(after, limit)
	return ev, 200, err
}

// handleHealth serves GET /healthz: ok while the instance serves, with
// its role (leader or standby), the leader, the revision its state
// reflects and whether it could reach its store lately (stale).
func (a *API) handleHealth(w http.ResponseWriter, r *http.Request) {
	h := a.svc.Health()
	code := http.StatusOK
	if h.Status != "ok" {
		code = http.StatusServiceUnavailable
	}
	a.roleHeaders(w, h)
	writeJSON(w, code, h)
}

// roleHeaders says on every answer which role the instance has, which
// store revision its state reflects, and whether it is stale.
func (a *API) roleHeaders(w http.ResponseWriter, h client.Health) {
	if h.Role != "" {
		w.Header().Set("X-ICN-Role", h.Role)
	}
	if h.Revision != 0 {
		w.Header().Set("X-ICN-Revision", strconv.FormatInt(h.Revision, 10))
	}
	if h.Stale {
		w.Header().Set("X-ICN-Stale", "true")
	}
}

// serve runs one API handler: auth, size limit, error mapping. It returns
// the status code written.
func (a *API) serve(w http.ResponseWriter, r *http.Request, write bool, h apiHandler) (code int) {
	defer func() {
		if p := recover(); p != nil {
			code = http.StatusInternalServerError
			writeJSON(w, code, apiError{Error: fmt.Sprintf("internal error: %v", p)})
		}
	}()
	if (write || !a.o.OpenRead) && !a.svc.Authorized(r.Header.Get("Authorization")) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="icn"`)
		writeJSON(w, http.StatusUnauthorized, apiError{Error: "missing or wrong bearer token (see the token file of the service)"})
		return http.StatusUnauthorized
	}
	a.roleHeaders(w, a.svc.Health())
	r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
	w = writeDeadlines(w)
	v, code, err := h(w, r)
	if errors.Is(err, errWritten) {
		return code
	}
	if errors.Is(err, client.ErrNotLeader) {
		return a.notLeader(w, r, err)
	}
	if err != nil {
		code = StatusOf(err)
		writeJSON(w, code, apiError{Error: err.Error(), Kind: KindOf(err)})
		return code
	}
	writeJSON(w, code, v)
	return code
}

// notLeader answers a change sent to an instance that does not lead:
// 307 to the leader (the request is to be sent again there, with its
// body and token), or 503 while no leader is known.
func (a *API) notLeader(w http.ResponseWriter, r *http.Request, err error) int {
	h := a.svc.Health()
	if h.Leader != "" && h.Leader != h.URL {
		w.Header().Set("X-ICN-Leader", h.Leader)
		w.Header().Set("Location", strings.TrimRight(h.Leader, "/")+r.URL.RequestURI())
		writeJSON(w, http.StatusTemporaryRedirect, apiError{Error: err.Error(), Kind: client.KindNotLeader, Leader: h.Leader})
		return http.StatusTemporaryRedirect
	}
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusServiceUnavailable, apiError{Error: err.Error(), Kind: client.KindNotLeader})
	return http.StatusServiceUnavailable
}

// serveBackup streams a consistent copy of the database (always behind
// the token: the copy holds everything, the token hash included).
func (a *API) serveBackup(w http.ResponseWriter, r *http.Request) int {
	if !a.svc.Authorized(r.Header.Get("Authorization")) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="icn"`)
		writeJSON(w, http.StatusUnauthorized, apiError{Error: "missing or wrong bearer token (see the token file of the service)"})
		return http.StatusUnauthorized
	}
	w = writeDeadlines(w)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="icn-backup.db"`)
	started := false
	_, err := a.svc.Backup(w, func(size int64) {
		started = true
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	})
	if err != nil && !started {
		writeJSON(w, http.StatusServiceUnavailable, apiError{Error: "storage: " + err.Error(), Kind: client.KindStorage})
		return http.StatusServiceUnavailable
	}
	if err != nil {
		// Headers are gone; abort the connection so the client sees a
		// short (hence failed) copy.
		panic(http.ErrAbortHandler)
	}
	return http.StatusOK
}

// StatusOf is the HTTP status of an error of the service.
func StatusOf(err error) int {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, client.ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, client.ErrTimeout):
		return http.StatusRequestTimeout
	case errors.Is(err, client.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, client.ErrConflict), errors.Is(err, client.ErrBudget):
		// Not now (no room now, or no set found within the placement
		// budget: KindOf tells which): the request is refused, the
		// service is fine.
		return http.StatusConflict
	case errors.Is(err, client.ErrClosing), errors.Is(err, client.ErrNotLeader):
		return http.StatusServiceUnavailable
	case errors.Is(err, context.Canceled):
		return 499 // the client closed the request (nginx's code); nobody reads it
	case strings.HasPrefix(err.Error(), "storage:"):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// KindOf is the kind of an error of the service (client.KindBudget, …),
// which an error answer names beside its status.
func KindOf(err error) string {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return client.KindTooLarge
	case errors.Is(err, client.ErrBadRequest):
		return client.KindBadRequest
	case errors.Is(err, client.ErrTimeout):
		return client.KindTimeout
	case errors.Is(err, client.ErrNotFound):
		return client.KindNotFound
	case errors.Is(err, client.ErrBudget):
		return client.KindBudget
	case errors.Is(err, client.ErrConflict):
		return client.KindConflict
	case errors.Is(err, client.ErrClosing):
		return client.KindClosing
	case errors.Is(err, client.ErrNotLeader):
		return client.KindNotLeader
	case errors.Is(err, context.Canceled):
		return client.KindCancelled
	case strings.HasPrefix(err.Error(), "storage:"):
		return client.KindStorage
	}
	return client.KindInternal
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	if client.LargeTable(v, client.IndentLimit) != nil {
		err := client.StreamJSON(w, v, func() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
		})
		if err == nil {
			return
		}
		v, code = map[string]string{"error": err.Error()}, http.StatusInternalServerError
	}
	data, err := client.Encode(v)
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
			return fmt.Errorf("%w: the request body did not arrive in time (%d bytes received)", client.ErrTimeout, len(data))
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

// gzipFrom is the size from which a kept answer goes gzip-compressed to
// a client that accepts it (GET /api/fabric of a 98 304-node torus:
// 38.5 MB, 7.2 MB compressed in about 0.2 s, once per version).
const gzipFrom = 1 << 20

// keptAnswer is what writeKept derives once from a kept answer: data is
// the answer the backend kept (the same slice while its version lasts);
// its entity tag and its gzip form are made once for every reader of that
// version.
type keptAnswer struct {
	data     []byte
	tagOnce  sync.Once
	tag      string // quoted, without the "-gz" of the compressed form
	gzipOnce sync.Once
	gz       []byte
}

// kept returns the kept answer of endpoint for data, made anew when data
// is not the slice it was made for.
func (a *API) kept(endpoint string, data []byte) *keptAnswer {
	a.gzMu.Lock()
	defer a.gzMu.Unlock()
	e := a.gz[endpoint]
	if e == nil || len(e.data) != len(data) || len(data) > 0 && &e.data[0] != &data[0] {
		e = &keptAnswer{data: data}
		a.gz[endpoint] = e
	}
	return e
}

// keptWarmer is a backend that computes its kept answers in the
// background as their versions come, and has them handed to fn then
// (endpoint "jobs" or "load"), so that the tag and the gzip form are
// ready before the first read too.
type keptWarmer interface {
	OnKept(fn func(endpoint string, data []byte))
}

// warmKept makes the tag and, for a large answer, the gzip form of a
// new version of an endpoint's kept answer.
func (a *API) warmKept(endpoint string, data []byte) {
	e := a.kept(endpoint, data)
	e.entityTag()
	if len(data) >= gzipFrom {
		e.gzipped()
	}
}

// gzipped returns the answer compressed (once).
func (k *keptAnswer) gzipped() []byte {
	k.gzipOnce.Do(func() {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
		zw.Write(k.data)
		zw.Close()
		k.gz = b.Bytes()
	})
	return k.gz
}

// entityTag is the answer's ETag: a digest of its bytes (the same bytes,
// the same tag, across restarts and instances).
func (k *keptAnswer) entityTag() string {
	k.tagOnce.Do(func() {
		sum := sha256.Sum256(k.data)
		k.tag = hex.EncodeToString(sum[:12])
	})
	return k.tag
}

// writeKept writes an answer the backend keeps per version (FabricJSON,
// LoadsJSON, JobsJSON) with an ETag, or 304 Not Modified without a body
// to a request whose If-None-Match names it (the page polls every 3 s:
// an unchanged 98 304-node fabric is not sent again); gzip-compressed
// when it is large and the client accepts gzip, the compressed form kept
// per endpoint while the answer stays the same.
func (a *API) writeKept(w http.ResponseWriter, r *http.Request, endpoint string, data []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Add("Vary", "Accept-Encoding")
	// A cache may keep the answer but must ask again before using it.
	h.Set("Cache-Control", "no-cache")
	e := a.kept(endpoint, data)
	tag := e.entityTag()
	gz := len(data) >= gzipFrom && acceptsGzip(r)
	if gz {
		tag += "-gz" // another representation, another tag
	}
	h.Set("ETag", `"`+tag+`"`)
	if noneMatch(r.Header.Get("If-None-Match"), e.tag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if gz {
		data = e.gzipped()
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	w.Write(data)
}

// noneMatch reports whether an If-None-Match header names the answer
// whose tag is tag (in either representation, weak or strong, or "*").
func noneMatch(header, tag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == `"`+tag+`"` || t == `"`+tag+`-gz"` {
			return true
		}
	}
	return false
}

// acceptsGzip reports whether the request's Accept-Encoding takes gzip.
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, c := range strings.Split(v, ",") {
			name, param, _ := strings.Cut(c, ";")
			if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
				continue
			}
			k, q, _ := strings.Cut(strings.TrimSpace(param), "=")
			if x, err := strconv.ParseFloat(strings.TrimSpace(q), 64); strings.TrimSpace(k) == "q" && err == nil && x == 0 {
				return false
			}
			return true
		}
	}
	return false
}

// errWritten tells serve that the handler wrote its answer itself.
var errWritten = errors.New("answer written")

func badRequest(format string, a ...any) error {
	return fmt.Errorf("%w: %s", client.ErrBadRequest, fmt.Sprintf(format, a...))
}

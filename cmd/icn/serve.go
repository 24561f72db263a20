package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/icn-hpc/icn/fm/api"
	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/fm/store"

	"github.com/icn-hpc/icn/fm"
	"github.com/icn-hpc/icn/internal/atomicfile"
	"github.com/icn-hpc/icn/internal/cli"
	"github.com/icn-hpc/icn/unicast"
	"github.com/spf13/cobra"
)

// This file is named so that its init runs after fabric.go's and
// mcast.go's: it adds client subcommands to their command groups.

func defaultDBPath() string {
	dir := os.Getenv("XDG_DATA_HOME")
	if dir == "" {
		if home, err := os.UserHomeDir(); err == nil {
			dir = filepath.Join(home, ".local", "share")
		} else {
			dir = os.TempDir()
		}
	}
	return filepath.Join(dir, "icn", "icn.db")
}

// serveOptions are the flags of icn serve.
type serveOptions struct {
	db, addr, topo, rules string
	openRead, replace     bool
	mcastTimeout          time.Duration
	repairExtra           int
	failureBudget         time.Duration
	check, rotateToken    bool
	tlsCert, tlsKey       string
	insecure              bool
	budget                budgetFlag
	engine, lftOut        string
	lftHook               string
	lftCompact            bool
	lftKeepRepairs        bool
	// A store shared by several instances (--store etcd://…).
	store, tokenFile          string
	etcdCA, etcdCert, etcdKey string
	lease                     time.Duration
	name, advertise           string
	dbGiven                   bool
}

func newServeCmd() *cobra.Command {
	var o serveOptions
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the fabric-manager service: persistent state, HTTP API, multicast join/leave, job placement, web page",
		Long: `Runs the fabric manager on an embedded transactional store. The first run creates the
database (default ` + defaultDBPath() + `) with a demo 4x4x4x2 Angara torus, generates the
API token, stores it next to the database with mode 0600 and prints it on the first start
that serves. Before serving, the whole database file is checked; a damaged file is refused
and left unmodified (--check runs only the check). A non-loopback address needs TLS
(--tls-cert/--tls-key) or --insecure.

With --store etcd://HOST:PORT[,HOST:PORT…]/PREFIX the state lives on an etcd cluster
instead, and any number of instances started on the same store form one fabric manager:
one leads (it alone changes the store, every write fenced by its leadership), the others
stand by with the whole state in memory, answer reads, and redirect writes to the leader
(307). When the leader dies, freezes or is cut off, a standby takes over within --lease
plus about two seconds. The instances share one token file (--token-file, created with
mode 0600 by the first start) and must be started with the same --topo and --rules.`,
		Example: `  icn serve
  icn serve --db /var/lib/icn/fm.db --addr 127.0.0.1:9090 --topo torus:8x8x4x4
  icn serve --db fm.db --check
  icn serve --db fm.db --addr 0.0.0.0:8443 --tls-cert cert.pem --tls-key key.pem
  icn serve backup --db fm.db copy.db
  icn serve --store etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379/icn --token-file /etc/icn/token --addr 0.0.0.0:8443 --tls-cert cert.pem --tls-key key.pem
  icn serve store copy --from bolt:fm.db --to etcd://127.0.0.1:2379/icn`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.dbGiven = c.Flags().Changed("db")
			return runServe(c.Context(), o, c.ErrOrStderr())
		},
	}
	f := c.Flags()
	registerBudget(c, &o.budget, "time one job placement's node selection may take from its turn, as icn alloc --budget (a table that does not fit in what is left is built after the answer: routing \"pending\" until verified; no set within it answers 409 of kind budget)")
	f.StringVar(&o.db, "db", defaultDBPath(), "database file")
	f.StringVar(&o.addr, "addr", "127.0.0.1:8080", "listen address (loopback by default; others need TLS or --insecure)")
	f.StringVar(&o.topo, "topo", "", "fabric of a new database (default "+fm.DefaultTopo+"); an existing database keeps its own unless --replace-topo")
	f.BoolVar(&o.replace, "replace-topo", false, "replace the fabric of an existing database with --topo (refused while jobs run)")
	f.StringVar(&o.rules, "rules", "angara*", "torus routing rule for job tables")
	f.BoolVar(&o.openRead, "open-read", false, "serve read-only endpoints without the token")
	f.DurationVar(&o.mcastTimeout, "mcast-timeout", 30*time.Second, "how long a multicast group may wait for missing joins or leaves")
	f.StringVar(&o.engine, "engine", "", "keep the fabric's unicast tables with this engine ("+strings.Join(unicast.EngineNames(), ", ")+"), recomputed after every failure or repair; needs --lft-out")
	f.StringVar(&o.lftOut, "lft-out", "", "OpenSM dump the unicast tables are written to, replaced atomically (opensm -R file -U FILE)")
	f.BoolVar(&o.lftCompact, "lft-compact", false, "write --lft-out without the comment naming each LID's holder (a sixth of the size; OpenSM reads only LID and port)")
	f.BoolVar(&o.lftKeepRepairs, "lft-keep-repairs", false, enginesWith(func(c unicast.Caps) bool { return c.Update == "repair" })+": keep the tables a failure's repair gives (only broken routes moved) instead of replacing them with a full computation in the background (which moves most routes)")
	f.StringVar(&o.lftHook, "lft-hook", "", "shell command run after every replacement of --lft-out, with ICN_LFT set to its path (for example 'kill -HUP $(pidof opensm)': OpenSM 3.3 reloads the file on SIGHUP)")
	f.DurationVar(&o.failureBudget, "failure-budget", fm.DefaultFailureBudget, "time a failure's re-routing of the jobs may take before its answer; a job whose new table does not fit is answered \"pending\" and its table built and verified after the answer (0: none, every job re-routed first)")
	f.IntVar(&o.repairExtra, "repair-extra", fm.DefaultRepairExtra, "transit nodes beyond its own allowance a job may gain when a failure leaves its nodes without a legal route (0: none)")
	f.BoolVar(&o.check, "check", false, "only check the database file (exit 0 if it can be served, 1 with the problem otherwise, 2 if --db names no file)")
	f.BoolVar(&o.rotateToken, "rotate-token", false, "replace the API token (token file and stored hash) and print the new one")
	f.StringVar(&o.tlsCert, "tls-cert", "", "TLS certificate file (PEM); serve HTTPS")
	f.StringVar(&o.tlsKey, "tls-key", "", "TLS private key file (PEM)")
	f.BoolVar(&o.insecure, "insecure", false, "allow plain HTTP on a non-loopback address")
	f.StringVar(&o.store, "store", "", "store: bolt:FILE (as --db), or etcd://HOST:PORT[,HOST:PORT…]/PREFIX, shared by several instances of which one leads (not with --db)")
	f.StringVar(&o.tokenFile, "token-file", "", "file holding the API token, created with mode 0600 on the first start (default: the database file with .token; required with an etcd store, the same file for every instance)")
	f.DurationVar(&o.lease, "lease", fm.DefaultLease, "etcd store: how long the leader leads without renewing its lease (whole seconds); a standby takes over within it after the leader dies or freezes")
	f.StringVar(&o.name, "name", "", "etcd store: this instance's name in the audit log and /healthz (default: its address)")
	f.StringVar(&o.advertise, "advertise", "", "etcd store: the URL clients reach this instance at, where standbys send writes (default: from --addr)")
	f.StringVar(&o.etcdCA, "etcd-cacert", "", "etcd store: PEM file of the CA that signs the etcd members' certificates (TLS)")
	f.StringVar(&o.etcdCert, "etcd-cert", "", "etcd store: this instance's client certificate (PEM) for etcd")
	f.StringVar(&o.etcdKey, "etcd-key", "", "etcd store: the client certificate's key (PEM)")
	c.AddCommand(newServeBackupCmd(), newServeStoreCmd())
	return c
}

// storeOf reads --db/--store: a bbolt file, or an etcd store.
func storeOf(o serveOptions) (db string, etcd *store.EtcdConfig, err error) {
	switch {
	case o.store == "":
		return o.db, nil, nil
	case o.dbGiven:
		return "", nil, &exitError{code: 2, err: fmt.Errorf("--db and --store are exclusive: give one store")}
	case strings.HasPrefix(o.store, "bolt:"):
		if o.store == "bolt:" {
			return "", nil, &exitError{code: 2, err: fmt.Errorf("--store bolt: names no file")}
		}
		return strings.TrimPrefix(o.store, "bolt:"), nil, nil
	}
	cfg, err := parseEtcdStore(o.store, o.etcdCA, o.etcdCert, o.etcdKey)
	if err != nil {
		return "", nil, err
	}
	return "", &cfg, nil
}

// parseEtcdStore reads an etcd:// store address and its TLS files.
func parseEtcdStore(u, ca, cert, key string) (store.EtcdConfig, error) {
	cfg, err := store.ParseEtcdURL(u)
	if err != nil {
		return cfg, &exitError{code: 2, err: err}
	}
	if (cert == "") != (key == "") {
		return cfg, &exitError{code: 2, err: fmt.Errorf("give both --etcd-cert and --etcd-key, or neither")}
	}
	for _, f := range []string{ca, cert, key} {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			return cfg, &exitError{code: 2, err: fmt.Errorf("etcd TLS file: %v", err)}
		}
	}
	cfg.CACert, cfg.Cert, cfg.Key = ca, cert, key
	return cfg, nil
}

// storeExit gives errors of opening or checking a store their exit
// status: the store unreachable or held by another process is the
// environment (3), a request that disagrees with the store invalid (2).
func storeExit(err error, check bool) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, store.ErrLocked):
		return &exitError{code: 3, err: err}
	case check && (errors.Is(err, store.ErrDamaged) || errors.Is(err, store.ErrForeign)):
		return &exitError{code: 1, err: err}
	}
	return &exitError{code: 2, err: err}
}

func runServe(ctx context.Context, o serveOptions, w io.Writer) error {
	db, etcd, err := storeOf(o)
	if err != nil {
		return err
	}
	where := db
	if etcd != nil {
		where = etcd.URL()
		if o.tokenFile == "" {
			return &exitError{code: 2, err: fmt.Errorf("--store %s needs --token-file FILE: one token file shared by every instance of the store (created with mode 0600 by the first start)", where)}
		}
	}
	if o.check {
		if err := fm.Check(fm.Config{DBPath: db, Etcd: etcd, TokenFile: o.tokenFile, NewRouting: fm.AngaraRouting(o.rules)}); err != nil {
			return storeExit(err, true)
		}
		fmt.Fprintf(w, "%s: ok (every record checked, and the stored fabric, jobs and groups rebuilt as serve does)\n", where)
		return nil
	}
	if err := checkServeFlags(o, etcd != nil); err != nil {
		return err
	}
	uni := unicastConfig(o)
	if etcd == nil {
		if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
			return err
		}
	}
	// The address first: standbys send writers to it.
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return &exitError{code: 3, err: fmt.Errorf("--addr %s: %v", o.addr, err)}
	}
	base := serviceURL(ln.Addr(), o.tlsCert != "")
	url := strings.TrimRight(base, "/")
	if o.advertise != "" {
		url = strings.TrimRight(o.advertise, "/")
	}
	name := o.name
	if name == "" {
		name = strings.TrimPrefix(strings.TrimPrefix(url, "http://"), "https://")
	}
	tokenFile := o.tokenFile
	if tokenFile == "" {
		tokenFile = fm.TokenFile(db)
	}
	svc, token, err := fm.Open(fm.Config{DBPath: db, Etcd: etcd, TokenFile: tokenFile, Lease: o.lease, Name: name, URL: url,
		Rules: o.rules, Topo: o.topo, ReplaceTopo: o.replace && o.topo != "",
		NewRouting: fm.AngaraRouting(o.rules), MulticastTimeout: o.mcastTimeout, RotateToken: o.rotateToken, RepairExtra: repairExtra(o.repairExtra),
		PlacementBudget: placementBudget(o.budget.d), FailureBudget: placementBudget(o.failureBudget), Unicast: uni})
	if err != nil {
		ln.Close()
		return storeExit(err, false)
	}
	defer svc.Close()
	if err := printServeBanner(w, o, svc, token, tokenFile, base, where, name, db, etcd != nil); err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: api.New(svc, api.Options{OpenRead: o.openRead}),
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
	return serveUntilSignal(ctx, svc, srv, ln, o)
}

// checkServeFlags refuses flag values serve cannot start with (exit 2),
// before anything is opened; etcd says whether the store is etcd.
func checkServeFlags(o serveOptions, etcd bool) error {
	if o.repairExtra < 0 {
		return &exitError{code: 2, err: fmt.Errorf("--repair-extra %d: give 0 or more transit nodes", o.repairExtra)}
	}
	if o.failureBudget < 0 {
		return &exitError{code: 2, err: fmt.Errorf("--failure-budget %v: give 0 (none) or a positive duration", o.failureBudget)}
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return &exitError{code: 2, err: fmt.Errorf("give both --tls-cert and --tls-key, or neither")}
	}
	if err := checkListenAddr(o.addr); err != nil {
		return &exitError{code: 2, err: err}
	}
	tls := o.tlsCert != ""
	if !tls && !o.insecure && !loopbackAddr(o.addr) {
		return &exitError{code: 2, err: fmt.Errorf("--addr %s is not a loopback address: the token would travel in clear text; give --tls-cert and --tls-key, or --insecure to serve plain HTTP anyway", o.addr)}
	}
	if (o.engine == "") != (o.lftOut == "") {
		return &exitError{code: 2, err: fmt.Errorf("give both --engine and --lft-out, or neither")}
	}
	if etcd && (o.lease < time.Second || o.lease%time.Second != 0) {
		return &exitError{code: 2, err: fmt.Errorf("--lease %v: give whole seconds, at least 1s (etcd leases count seconds)", o.lease)}
	}
	if o.lftHook != "" && o.lftOut == "" {
		return &exitError{code: 2, err: fmt.Errorf("--lft-hook needs --lft-out")}
	}
	return nil
}

// unicastConfig is the service's unicast set-up from --engine, --lft-out
// and --lft-hook (nil without --engine).
func unicastConfig(o serveOptions) *fm.UnicastConfig {
	if o.engine == "" {
		return nil
	}
	uni := &fm.UnicastConfig{Engine: o.engine, LFTOut: o.lftOut, Compact: o.lftCompact, KeepRepairs: o.lftKeepRepairs}
	if hook := o.lftHook; hook != "" {
		uni.Hook = func(ctx context.Context, path string) error {
			cmd := exec.CommandContext(ctx, "sh", "-c", hook)
			cmd.Env = append(os.Environ(), "ICN_LFT="+path)
			// When ctx ends (the service closes, or the hook's
			// minute is up) the shell is killed; a child it left
			// holding the output must not keep the service waiting.
			cmd.WaitDelay = 5 * time.Second
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("--lft-hook: %v: %s", err, strings.TrimSpace(string(out)))
			}
			return nil
		}
	}
	return uni
}

// printServeBanner says where the service listens and what it holds, and
// shows a new API token once.
func printServeBanner(w io.Writer, o serveOptions, svc *fm.Service, token, tokenFile, base, where, name, db string, etcd bool) error {
	if !etcd && o.topo != "" && !o.replace && svc.Spec() != o.topo {
		fmt.Fprintf(w, "icn: note: --topo %s ignored: the database already holds fabric %s (give --replace-topo to replace it)\n", o.topo, svc.Spec())
	}
	fmt.Fprintf(w, "icn fabric manager on %s (%s %s, fabric %s)\n", base, map[bool]string{false: "database", true: "store"}[etcd], where, svc.Spec())
	if etcd {
		fmt.Fprintf(w, "instance %s of %s: leader or standby as elected (lease %v); GET /healthz says which\n", name, where, o.lease)
	}
	if u := svc.Unicast(); u != nil {
		fmt.Fprintf(w, "unicast tables (%s) written to %s in %.1f s; rewritten after every failure or repair\n", u.Engine, u.LFTOut, u.Seconds)
	}
	if before, after := svc.Compacted(); after < before {
		fmt.Fprintf(w, "icn: compacted %s from %.1f MB to %.1f MB (more than half of it was free pages)\n", db, float64(before)/1e6, float64(after)/1e6)
	}
	if token == "" {
		fmt.Fprintf(w, "API token: in %s (printed when it was created; --rotate-token makes a new one)\n", tokenFile)
	}
	if token != "" {
		fmt.Fprintf(w, "API token (shown once; also in %s): %s\n", tokenFile, token)
		fmt.Fprintf(w, "web page: %s#token=%s\n", base, token)
		if err := svc.TokenShown(); err != nil {
			return err
		}
	}
	return nil
}

// serveUntilSignal serves until the listener fails or SIGINT/SIGTERM.
func serveUntilSignal(ctx context.Context, svc *fm.Service, srv *http.Server, ln net.Listener, o serveOptions) error {
	stop := make(chan struct{})
	go svc.RunTicker(time.Second, stop)
	defer close(stop)
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		if o.tlsCert != "" {
			errc <- srv.ServeTLS(ln, o.tlsCert, o.tlsKey)
			return
		}
		errc <- srv.Serve(ln)
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	return srv.Shutdown(sctx)
}

// checkListenAddr refuses a listen address that no listen could take: no
// port, or a port out of range or unknown (a flag value: exit 2, where a
// listen that fails on a good address is the environment's, 3).
func checkListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = net.LookupPort("tcp", port)
	}
	if err != nil {
		return fmt.Errorf("--addr %s: not a listen address HOST:PORT (%v)", addr, err)
	}
	return nil
}

// loopbackAddr reports whether a listen address is loopback only.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serviceURL is a URL clients can use: an unspecified address (0.0.0.0,
// ::) is shown with the host name, IPv6 in brackets.
func serviceURL(a net.Addr, tls bool) string {
	scheme := "http"
	if tls {
		scheme = "https"
	}
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return scheme + "://" + a.String() + "/"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = hostname()
		if host == "unknown" {
			host = "127.0.0.1"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/"
}

type serveBackupOptions struct {
	db, server, tokenFile, cacert string
}

func newServeBackupCmd() *cobra.Command {
	var o serveBackupOptions
	c := &cobra.Command{
		Use:   "backup FILE",
		Short: "Write a consistent copy of the database to FILE (hot: from the running service if it holds the database)",
		Long: `Writes a consistent copy of the fabric-manager database. If no service holds the
database, the file is read directly; otherwise the copy comes from the running service's
GET /api/backup (--server, token from ICN_TOKEN, --token-file or the database's token
file). The copy is written to a temporary file, checked, then renamed to FILE (a device or
a pipe is written through after the check, never replaced).`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runServeBackup(c.Context(), o, args[0], c.ErrOrStderr())
		},
	}
	c.Flags().StringVar(&o.db, "db", defaultDBPath(), "database file")
	def := os.Getenv("ICN_SERVER")
	if def == "" {
		def = "http://127.0.0.1:8080"
	}
	c.Flags().StringVar(&o.server, "server", def, "URL of the service holding the database (env ICN_SERVER)")
	c.Flags().StringVar(&o.cacert, "cacert", os.Getenv("ICN_CACERT"), "PEM file of the certificate authority (or the self-signed certificate) that an https server's certificate must chain to (env ICN_CACERT)")
	c.Flags().StringVar(&o.tokenFile, "token-file", "", "file holding the API token (default: ICN_TOKEN, else the database's token file)")
	return c
}

func runServeBackup(ctx context.Context, o serveBackupOptions, file string, w io.Writer) error {
	if err := atomicfile.Check(file); err != nil {
		return err
	}
	n, err := store.BackupFile(func(out io.Writer) (int64, error) {
		st, err := store.OpenBoltReadOnly(o.db)
		if err == nil {
			defer st.Close()
			return st.Backup(out, nil)
		}
		if !errors.Is(err, store.ErrLocked) {
			return 0, err
		}
		return backupFromServer(ctx, o, out)
	}, file)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "backup of %s written to %s (%d bytes, checked)\n", o.db, file, n)
	return nil
}

// backupFromServer streams GET /api/backup of a running service.
func backupFromServer(ctx context.Context, o serveBackupOptions, out io.Writer) (int64, error) {
	tok := os.Getenv("ICN_TOKEN")
	tf := o.tokenFile
	if tf == "" && tok == "" {
		tf = fm.TokenFile(o.db)
	}
	if tf != "" {
		b, err := os.ReadFile(tf)
		if err != nil {
			return 0, fmt.Errorf("the database is held by a running service and its token is unreadable: %v", err)
		}
		tok = strings.TrimSpace(string(b))
	}
	if ctx == nil {
		ctx = context.Background()
	}
	hc, err := newHTTPClient(o.cacert, 0)
	if err != nil {
		return 0, err
	}
	cl := client.New(o.server, tok)
	cl.HTTP, cl.Actor = hc, "cli@"+hostname()
	resp, err := cl.Send(ctx, http.MethodGet, "/api/backup", nil, true)
	if client.StatusOf(err) == 0 && err != nil {
		return 0, fmt.Errorf("the database is held by a running service, which cannot be reached at %s: %v", o.server, err)
	}
	if err != nil {
		return 0, fmt.Errorf("GET %s/api/backup: %v", o.server, err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(out, resp.Body)
	if err == nil && resp.ContentLength >= 0 && n != resp.ContentLength {
		err = fmt.Errorf("short backup: %d of %d bytes", n, resp.ContentLength)
	}
	return n, err
}

// fabricClientCmds are the client subcommands of icn fabric: failures,
// repairs and status of a running fabric manager.
func fabricClientCmds() []*cobra.Command {
	var cmds []*cobra.Command
	for _, k := range []struct {
		use, kind string
		repair    bool
	}{{"fail-link LINK", "link", false}, {"repair-link LINK", "link", true}, {"fail-node NODE", "node", false}, {"repair-node NODE", "node", true}} {
		cmds = append(cmds, newFabricFailureCmd(k.use, k.kind, k.repair))
	}
	return append(cmds, newFabricStatusCmd())
}

// fabricFailureOptions are the flags and argument of icn fabric
// fail-link, repair-link, fail-node and repair-node.
type fabricFailureOptions struct {
	cl     clientFlags
	kind   string // link or node
	repair bool
	name   string // the link or node
}

func newFabricFailureCmd(use, kind string, repair bool) *cobra.Command {
	o := fabricFailureOptions{kind: kind, repair: repair}
	c := &cobra.Command{
		Use:   use,
		Short: fmt.Sprintf("Tell a running fabric manager that a %s %s", kind, map[bool]string{false: "failed", true: "was repaired"}[repair]),
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.name = args[0]
			return runFabricFailure(c.Context(), o, stdout(c))
		},
	}
	o.cl.register(c)
	return c
}

// runFabricFailure reports a failure or repair and prints the fabric's
// failures and the jobs affected and rerouted.
func runFabricFailure(ctx context.Context, o fabricFailureOptions, w io.Writer) error {
	body := map[string]any{o.kind: o.name, "repair": o.repair}
	var res client.FailureResult
	if err := o.cl.do(ctx, http.MethodPost, "/api/fabric/failures", body, &res); err != nil {
		return err
	}
	return o.cl.print(w, res, func(w io.Writer) error {
		return writeFailureResult(w, &res)
	})
}

// writeFailureResult prints a failure change's answer as text: the
// fabric's failures, then one line per job it touched and per multicast
// group whose tree it moved.
func writeFailureResult(w io.Writer, res *client.FailureResult) error {
	none := func(s string) string {
		if s == "" {
			return "none"
		}
		return s
	}
	if err := cli.KV(w, "failed links", none(strings.Join(res.FailedLinks, " ")), "failed nodes", none(strings.Join(res.FailedNodes, " ")),
		"jobs affected", len(res.Jobs), "groups moved", len(res.Groups)); err != nil {
		return err
	}
	if len(res.Jobs) > 0 {
		fmt.Fprintln(w)
		t := cli.NewTable("job", "now", "what happened")
		for _, e := range res.Jobs {
			t.Row(e.ID, jobEffectState(e), jobEffectText(e))
		}
		if err := t.Write(w); err != nil {
			return err
		}
	}
	if len(res.Groups) > 0 {
		fmt.Fprintln(w)
		t := cli.NewTable("group", "old root", "new root", "state", "what happened")
		for _, e := range res.Groups {
			t.Row(e.ID, none(e.OldRoot), none(e.NewRoot), e.State, groupEffectText(e))
		}
		return t.Write(w)
	}
	return nil
}

// jobEffectState is the job's routing state after the change (answers of
// older services carry only the result).
func jobEffectState(e client.JobEffect) string {
	if e.State != "" {
		return e.State
	}
	return string(e.Result)
}

// jobEffectText says in words what a failure change did to a job.
func jobEffectText(e client.JobEffect) string {
	if len(e.TransitDropped) > 0 {
		return fmt.Sprintf("failed transit node %s dropped; %s", strings.Join(e.TransitDropped, " "), routeEffectText(e))
	}
	return routeEffectText(e)
}

// routeEffectText says what a failure change did to a job's table.
func routeEffectText(e client.JobEffect) string {
	switch {
	case e.Result == client.RouteBroken && e.Unreachable != nil:
		return fmt.Sprintf("no legal route from %s to %s inside its nodes: migrate it", e.Unreachable[0], e.Unreachable[1])
	case e.Result == client.RouteBroken:
		return e.Problem
	case e.Result == client.RoutePending:
		return "table pending: built and verified after this answer (over --failure-budget)"
	case len(e.TransitAdded) > 0:
		return fmt.Sprintf("new table, %d free node(s) added as transit: %s", len(e.TransitAdded), strings.Join(e.TransitAdded, " "))
	case e.State == "ok":
		return "new table of its original kind (no failure left among its nodes)"
	}
	return "new table on its own nodes"
}

// groupEffectText says in words what a failure change did to a group.
func groupEffectText(e client.GroupEffect) string {
	switch {
	case e.Reason != "":
		return e.Reason
	case e.NewRoot == "":
		return "no tree"
	case e.OldRoot == "":
		return fmt.Sprintf("tree of %d links computed", e.Links)
	case e.OldRoot != e.NewRoot:
		return fmt.Sprintf("tree moved to a new root (%d links)", e.Links)
	}
	return fmt.Sprintf("tree computed again on the same root (%d links)", e.Links)
}

// fabricStatusOptions are the flags of icn fabric status.
type fabricStatusOptions struct {
	cl clientFlags
}

func newFabricStatusCmd() *cobra.Command {
	var o fabricStatusOptions
	c := &cobra.Command{
		Use:   "status",
		Short: "Show a running fabric manager's fabric, failures and load",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runFabricStatus(c.Context(), o, stdout(c))
		},
	}
	o.cl.register(c)
	return c
}

// runFabricStatus prints the service's fabric, its failures and how many
// nodes jobs hold.
func runFabricStatus(ctx context.Context, o fabricStatusOptions, w io.Writer) error {
	var f client.FabricView
	if err := o.cl.do(ctx, http.MethodGet, "/api/fabric", nil, &f); err != nil {
		return err
	}
	busy := 0
	for _, n := range f.Nodes {
		if n.Job != 0 {
			busy++
		}
	}
	return o.cl.print(w, f, func(w io.Writer) error {
		return cli.KV(w, "fabric", f.Spec, "rules", f.Rules, "nodes", len(f.Nodes), "busy nodes", busy, "links", len(f.Links),
			"failed links", strings.Join(f.FailedLinks, " "), "failed nodes", strings.Join(f.FailedNodes, " "))
	})
}

// newJobCmd is the "icn job" group: jobs on a running fabric manager.
func newJobCmd() *cobra.Command {
	c := &cobra.Command{Use: "job", Short: "Place and release jobs on a running fabric manager"}
	c.AddCommand(newJobSubmitCmd(), newJobReleaseCmd(), newJobListCmd(), newJobMigrateCmd(), newJobRoutesCmd(), newJobVerifyCmd())
	return c
}

// jobSubmitOptions are the flags of icn job submit.
type jobSubmitOptions struct {
	cl      clientFlags
	nodes   int
	transit int
	algo    string
	name    string
}

func newJobSubmitCmd() *cobra.Command {
	var o jobSubmitOptions
	c := &cobra.Command{
		Use:   "submit",
		Short: "Request an allocation: node set and verified routing table",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runJobSubmit(c.Context(), o, stdout(c))
		},
	}
	c.Flags().IntVar(&o.nodes, "nodes", 0, "active nodes")
	c.Flags().IntVar(&o.transit, "transit", 0, "most transit nodes")
	c.Flags().StringVar(&o.algo, "algo", "improved", "improved or baseline")
	c.Flags().StringVar(&o.name, "name", "", "job name")
	c.MarkFlagRequired("nodes")
	o.cl.register(c)
	return c
}

// runJobSubmit places a job and prints its record without the table.
func runJobSubmit(ctx context.Context, o jobSubmitOptions, w io.Writer) error {
	var j client.JobRecord
	// A request id: if the fabric manager's leader dies before it answers,
	// the request is sent again to the next leader without a second
	// placement.
	req := client.JobRequest{Nodes: o.nodes, Transit: o.transit, Algo: o.algo, Name: o.name, RequestID: requestID()}
	if err := o.cl.do(ctx, http.MethodPost, "/api/jobs", req, &j); err != nil {
		return err
	}
	j.Table = nil
	return o.cl.print(w, j, func(w io.Writer) error { return writeJob(w, &j) })
}

// jobIDOptions are the flags and the job id of the icn job commands that
// act on one job.
type jobIDOptions struct {
	cl clientFlags
	id string
}

// newJobIDCmd is a command on one job (use is "verb ID") calling run.
func newJobIDCmd(use, short string, run func(context.Context, jobIDOptions, io.Writer) error) *cobra.Command {
	var o jobIDOptions
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.id = args[0]
			return run(c.Context(), o, stdout(c))
		},
	}
	o.cl.register(c)
	return c
}

func newJobReleaseCmd() *cobra.Command {
	return newJobIDCmd("release ID", "Release a job's nodes", runJobRelease)
}

// runJobRelease releases a job and prints its final record.
func runJobRelease(ctx context.Context, o jobIDOptions, w io.Writer) error {
	return jobAction(ctx, o, http.MethodDelete, "", w)
}

func newJobMigrateCmd() *cobra.Command {
	return newJobIDCmd("migrate ID", "Place a running (typically broken) job anew: new node set and verified table, old nodes freed", runJobMigrate)
}

// runJobMigrate places a job anew and prints its new record.
func runJobMigrate(ctx context.Context, o jobIDOptions, w io.Writer) error {
	return jobAction(ctx, o, http.MethodPost, "/migrate", w)
}

// jobAction sends method to the job's URL (plus suffix) and prints the
// job record it answers, without the table.
func jobAction(ctx context.Context, o jobIDOptions, method, suffix string, w io.Writer) error {
	var j client.JobRecord
	if err := o.cl.do(ctx, method, "/api/jobs/"+url.PathEscape(o.id)+suffix, nil, &j); err != nil {
		return err
	}
	j.Table = nil
	return o.cl.print(w, j, func(w io.Writer) error { return writeJob(w, &j) })
}

func newJobRoutesCmd() *cobra.Command {
	return newJobIDCmd("routes ID", "Print a job's routing table (the JSON of icn route --json; check it with icn route check)", runJobRoutes)
}

// runJobRoutes copies the job's routing table (JSON) to w.
func runJobRoutes(ctx context.Context, o jobIDOptions, w io.Writer) error {
	var raw json.RawMessage
	if err := o.cl.do(ctx, http.MethodGet, "/api/jobs/"+url.PathEscape(o.id)+"/routes", nil, &raw); err != nil {
		return err
	}
	_, err := w.Write(append(raw, '\n'))
	return err
}

func newJobVerifyCmd() *cobra.Command {
	return newJobIDCmd("verify ID", "Re-verify a running job's routing table on the current fabric", runJobVerify)
}

// jobVerifyResult is the service's answer to a verification.
type jobVerifyResult struct {
	ID      int    `json:"id"`
	OK      bool   `json:"ok"`
	Problem string `json:"problem"`
}

// runJobVerify re-verifies the job's table; a problem is exit status 1.
func runJobVerify(ctx context.Context, o jobIDOptions, w io.Writer) error {
	var v jobVerifyResult
	if err := o.cl.do(ctx, http.MethodPost, "/api/jobs/"+url.PathEscape(o.id)+"/verify", nil, &v); err != nil {
		return err
	}
	if err := o.cl.print(w, v, func(w io.Writer) error { return cli.KV(w, "job", v.ID, "ok", v.OK, "problem", v.Problem) }); err != nil {
		return err
	}
	if !v.OK {
		return &exitError{code: 1, err: fmt.Errorf("job %d: %s", v.ID, v.Problem)}
	}
	return nil
}

// jobListOptions are the flags of icn job list.
type jobListOptions struct {
	cl  clientFlags
	all bool
}

func newJobListCmd() *cobra.Command {
	var o jobListOptions
	c := &cobra.Command{
		Use:   "list",
		Short: "List running jobs (--all: released ones too)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runJobList(c.Context(), o, stdout(c))
		},
	}
	c.Flags().BoolVar(&o.all, "all", false, "include released jobs")
	o.cl.register(c)
	return c
}

// runJobList prints the running jobs (with --all the released ones too).
func runJobList(ctx context.Context, o jobListOptions, w io.Writer) error {
	var jobs []client.JobRecord
	path := "/api/jobs"
	if o.all {
		path += "?all=1"
	}
	if err := o.cl.do(ctx, http.MethodGet, path, nil, &jobs); err != nil {
		return err
	}
	return o.cl.print(w, jobs, func(w io.Writer) error {
		t := cli.NewTable("ID", "NAME", "STATE", "ACTIVE", "TRANSIT", "DIAMETER", "PI_MAX", "REACHABLE", "ROUTING", "CREATED")
		for _, j := range jobs {
			t.Row(j.ID, j.Name, j.State, len(j.Active), len(j.TransitNodes), j.Stats.Diameter, j.Stats.PiMax, j.Reachable, j.RoutingName(), j.Created.Format(time.RFC3339))
		}
		return t.Write(w)
	})
}

// mcastClientCmds are the client subcommands of icn mcast: join, leave
// and the group list of a running fabric manager.
func mcastClientCmds() []*cobra.Command {
	return []*cobra.Command{newMcastMemberCmd("join"), newMcastMemberCmd("leave"), newMcastGroupsCmd()}
}

// mcastMemberOptions are the flags of icn mcast join and leave.
type mcastMemberOptions struct {
	cl     clientFlags
	op     string // join or leave
	group  string
	member string
	count  int
}

func newMcastMemberCmd(op string) *cobra.Command {
	o := mcastMemberOptions{op: op}
	c := &cobra.Command{
		Use:   op,
		Short: map[string]string{"join": "Join a member to a multicast group on a running fabric manager (carries the member count)", "leave": "Leave a multicast group on a running fabric manager"}[op],
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runMcastMember(c.Context(), o, stdout(c))
		},
	}
	c.Flags().StringVar(&o.group, "group", "", "group id")
	c.Flags().StringVar(&o.member, "member", "", "member node name")
	// member_count in the API, --member-count here, "member count" on the
	// page; --count is its former name.
	c.Flags().IntVar(&o.count, "member-count", 0, "members the group will have (required on join; the API's member_count)")
	c.Flags().IntVar(&o.count, "count", 0, "former name of --member-count")
	c.Flags().MarkDeprecated("count", "use --member-count")
	c.MarkFlagRequired("group")
	c.MarkFlagRequired("member")
	o.cl.register(c)
	return c
}

// runMcastMember joins or leaves a group and prints the group's record.
func runMcastMember(ctx context.Context, o mcastMemberOptions, w io.Writer) error {
	var g client.GroupRecord
	req := client.McastRequest{Group: o.group, Member: o.member, MemberCount: o.count}
	if o.op == "join" {
		req.RequestID = requestID() // safe to send again after a takeover
	}
	if err := o.cl.do(ctx, http.MethodPost, "/api/mcast/"+o.op, req, &g); err != nil {
		return err
	}
	return o.cl.print(w, g, func(w io.Writer) error { return writeGroup(w, &g) })
}

// mcastGroupsOptions are the flags of icn mcast groups.
type mcastGroupsOptions struct {
	cl clientFlags
}

func newMcastGroupsCmd() *cobra.Command {
	var o mcastGroupsOptions
	c := &cobra.Command{
		Use:   "groups",
		Short: "List the multicast groups of a running fabric manager",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runMcastGroups(c.Context(), o, stdout(c))
		},
	}
	o.cl.register(c)
	return c
}

// runMcastGroups prints the service's multicast groups.
func runMcastGroups(ctx context.Context, o mcastGroupsOptions, w io.Writer) error {
	var gs []client.GroupRecord
	if err := o.cl.do(ctx, http.MethodGet, "/api/mcast", nil, &gs); err != nil {
		return err
	}
	return o.cl.print(w, gs, func(w io.Writer) error {
		t := cli.NewTable("GROUP", "STATE", "JOINED", "MEMBER COUNT", "ROOT", "HEIGHT", "EDGES")
		for _, g := range gs {
			t.Row(g.ID, g.State, len(g.Members), g.MemberCount, g.Root, g.Height, len(g.Edges))
		}
		return t.Write(w)
	})
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}

func writeJob(w io.Writer, j *client.JobRecord) error {
	kv := []any{"job", strconv.Itoa(j.ID), "state", j.State, "routing", j.RoutingName(), "active", strings.Join(j.Active, " "),
		"transit", strings.Join(j.TransitNodes, " "), "rules", j.Rules, "diameter", j.Stats.Diameter,
		"pi_max / pi_perfect", fmt.Sprintf("%d / %.3f", j.Stats.PiMax, j.Stats.PiPerfect), "deadlock free", j.Stats.DeadlockFree}
	if sel := j.Selection; sel != nil {
		kv = append(kv, "selection", searchSummary(sel.Exhaustive, sel.Settled, sel.Examined, sel.Complete, sel.Cut))
	}
	return cli.KV(w, kv...)
}

func writeGroup(w io.Writer, g *client.GroupRecord) error {
	return cli.KV(w, "group", g.ID, "state", g.State, "members joined", fmt.Sprintf("%d of %d (member count)", len(g.Members), g.MemberCount),
		"root", g.Root, "tree height", g.Height, "tree edges", len(g.Edges))
}

// placementBudget maps --budget (or --failure-budget) to
// fm.Config.PlacementBudget (FailureBudget): 0 there is the default;
// here it means none.
func placementBudget(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// repairExtra maps --repair-extra (0: none) to fm.Config.RepairExtra
// (0: the default, negative: none).
func repairExtra(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

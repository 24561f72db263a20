package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/icn-hpc/icn/fm"
	"github.com/icn-hpc/icn/internal/cli"
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

func init() {
	// icn serve
	{
		var db, addr, topo, rules string
		var openRead, replace bool
		var mcastTimeout time.Duration
		c := &cobra.Command{
			Use:   "serve",
			Short: "Run the fabric-manager service: persistent state, HTTP API, multicast join/leave, job placement, web page",
			Long: `Runs the fabric manager on an embedded transactional store. The first run creates the
database (default ` + defaultDBPath() + `) with a demo 4x4x4x2 Angara torus, generates the
API token, stores it next to the database with mode 0600 and prints it once.`,
			Example: `  icn serve
  icn serve --db /var/lib/icn/fm.db --addr 127.0.0.1:9090 --topo torus:8x8x4x4`,
			Args: cobra.NoArgs,
			RunE: func(c *cobra.Command, args []string) error {
				if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
					return err
				}
				svc, token, err := fm.Open(fm.Config{DBPath: db, Topo: topo, ReplaceTopo: replace && topo != "",
					NewRouting: fm.AngaraRouting(rules), MulticastTimeout: mcastTimeout})
				if err != nil {
					return err
				}
				defer svc.Close()
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					return err
				}
				host := ln.Addr().String()
				fmt.Fprintf(c.ErrOrStderr(), "icn fabric manager on http://%s/ (database %s, fabric %s)\n", host, db, svc.Fabric().Spec)
				if token != "" {
					fmt.Fprintf(c.ErrOrStderr(), "API token (shown once; also in %s): %s\n", fm.TokenFile(db), token)
					fmt.Fprintf(c.ErrOrStderr(), "web page: http://%s/#token=%s\n", host, token)
				}
				srv := &http.Server{Handler: svc.Handler(fm.HandlerOptions{OpenRead: openRead}),
					ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second}
				stop := make(chan struct{})
				go svc.RunTicker(time.Second, stop)
				ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
				defer cancel()
				errc := make(chan error, 1)
				go func() { errc <- srv.Serve(ln) }()
				select {
				case err := <-errc:
					close(stop)
					return err
				case <-ctx.Done():
				}
				close(stop)
				sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer scancel()
				return srv.Shutdown(sctx)
			},
		}
		c.Flags().StringVar(&db, "db", defaultDBPath(), "database file")
		c.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "listen address (loopback by default)")
		c.Flags().StringVar(&topo, "topo", "", "fabric of a new database (default "+fm.DefaultTopo+")")
		c.Flags().BoolVar(&replace, "replace-topo", false, "replace the fabric of an existing database with --topo (refused while jobs run)")
		c.Flags().StringVar(&rules, "rules", "angara*", "torus routing rule for job tables")
		c.Flags().BoolVar(&openRead, "open-read", false, "serve read-only endpoints without the token")
		c.Flags().DurationVar(&mcastTimeout, "mcast-timeout", 30*time.Second, "how long a multicast group may wait for missing joins or leaves")
		root.AddCommand(c)
	}

	// Client commands.
	var cl client
	addClient := func(parent *cobra.Command, c *cobra.Command) {
		cl.register(c)
		parent.AddCommand(c)
	}
	fabricCmd := findOrAdd("fabric", "Fabric routing engines and audits; fabric-manager client commands")
	for _, k := range []struct {
		use, kind string
		repair    bool
	}{{"fail-link LINK", "link", false}, {"repair-link LINK", "link", true}, {"fail-node NODE", "node", false}, {"repair-node NODE", "node", true}} {
		k := k
		addClient(fabricCmd, &cobra.Command{
			Use:   k.use,
			Short: fmt.Sprintf("Tell a running fabric manager that a %s %s", k.kind, map[bool]string{false: "failed", true: "was repaired"}[k.repair]),
			Args:  cobra.ExactArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				body := map[string]any{k.kind: args[0], "repair": k.repair}
				var res fm.FailureResult
				if err := cl.do(http.MethodPost, "/api/fabric/failures", body, &res); err != nil {
					return err
				}
				return cl.print(c, res, func(w io.Writer) error {
					return cli.KV(w, "failed links", strings.Join(res.FailedLinks, " "), "failed nodes", strings.Join(res.FailedNodes, " "),
						"jobs affected", fmt.Sprint(res.AffectedJobs))
				})
			},
		})
	}
	addClient(fabricCmd, &cobra.Command{
		Use:   "status",
		Short: "Show a running fabric manager's fabric, failures and load",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			var f fm.FabricView
			if err := cl.do(http.MethodGet, "/api/fabric", nil, &f); err != nil {
				return err
			}
			busy := 0
			for _, n := range f.Nodes {
				if n.Job != 0 {
					busy++
				}
			}
			return cl.print(c, f, func(w io.Writer) error {
				return cli.KV(w, "fabric", f.Spec, "rules", f.Rules, "nodes", len(f.Nodes), "busy nodes", busy, "links", len(f.Links),
					"failed links", strings.Join(f.FailedLinks, " "), "failed nodes", strings.Join(f.FailedNodes, " "))
			})
		},
	})

	job := findOrAdd("job", "Place and release jobs on a running fabric manager")
	{
		var nodes, transit int
		var algo, name string
		c := &cobra.Command{
			Use:   "submit",
			Short: "Request an allocation: node set and verified routing table",
			Args:  cobra.NoArgs,
			RunE: func(c *cobra.Command, args []string) error {
				var j fm.JobRecord
				if err := cl.do(http.MethodPost, "/api/jobs", fm.JobRequest{Nodes: nodes, Transit: transit, Algo: algo, Name: name}, &j); err != nil {
					return err
				}
				j.Table = nil
				return cl.print(c, j, func(w io.Writer) error { return writeJob(w, &j) })
			},
		}
		c.Flags().IntVar(&nodes, "nodes", 0, "active nodes")
		c.Flags().IntVar(&transit, "transit", 0, "most transit nodes")
		c.Flags().StringVar(&algo, "algo", "improved", "improved or baseline")
		c.Flags().StringVar(&name, "name", "", "job name")
		c.MarkFlagRequired("nodes")
		addClient(job, c)
	}
	addClient(job, &cobra.Command{
		Use:   "release ID",
		Short: "Release a job's nodes",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var j fm.JobRecord
			if err := cl.do(http.MethodDelete, "/api/jobs/"+url.PathEscape(args[0]), nil, &j); err != nil {
				return err
			}
			j.Table = nil
			return cl.print(c, j, func(w io.Writer) error { return writeJob(w, &j) })
		},
	})
	addClient(job, &cobra.Command{
		Use:   "list",
		Short: "List running jobs",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			var jobs []fm.JobRecord
			if err := cl.do(http.MethodGet, "/api/jobs", nil, &jobs); err != nil {
				return err
			}
			return cl.print(c, jobs, func(w io.Writer) error {
				t := cli.NewTable("ID", "NAME", "ACTIVE", "TRANSIT", "DIAMETER", "PI_MAX", "REACHABLE", "CREATED")
				for _, j := range jobs {
					t.Row(j.ID, j.Name, len(j.Active), len(j.TransitN), j.Stats.Diameter, j.Stats.PiMax, j.Reachable, j.Created.Format(time.RFC3339))
				}
				return t.Write(w)
			})
		},
	})
	addClient(job, &cobra.Command{
		Use:   "routes ID",
		Short: "Print a job's routing table (the JSON of icn route --json; check it with icn route check)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var raw json.RawMessage
			if err := cl.do(http.MethodGet, "/api/jobs/"+url.PathEscape(args[0])+"/routes", nil, &raw); err != nil {
				return err
			}
			_, err := stdout(c).Write(append(raw, '\n'))
			return err
		},
	})
	addClient(job, &cobra.Command{
		Use:   "verify ID",
		Short: "Re-verify a running job's routing table on the current fabric",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var v struct {
				ID      int    `json:"id"`
				OK      bool   `json:"ok"`
				Problem string `json:"problem"`
			}
			if err := cl.do(http.MethodPost, "/api/jobs/"+url.PathEscape(args[0])+"/verify", nil, &v); err != nil {
				return err
			}
			if err := cl.print(c, v, func(w io.Writer) error { return cli.KV(w, "job", v.ID, "ok", v.OK, "problem", v.Problem) }); err != nil {
				return err
			}
			if !v.OK {
				return &exitError{code: 1, err: fmt.Errorf("job %d: %s", v.ID, v.Problem)}
			}
			return nil
		},
	})

	mc := findOrAdd("mcast", "Multicast routing")
	for _, op := range []string{"join", "leave"} {
		op := op
		var group, member string
		var count int
		c := &cobra.Command{
			Use:   op,
			Short: map[string]string{"join": "Join a member to a multicast group on a running fabric manager (carries the member count)", "leave": "Leave a multicast group on a running fabric manager"}[op],
			Args:  cobra.NoArgs,
			RunE: func(c *cobra.Command, args []string) error {
				var g fm.GroupRecord
				if err := cl.do(http.MethodPost, "/api/mcast/"+op, fm.McastRequest{Group: group, Member: member, MemberCount: count}, &g); err != nil {
					return err
				}
				return cl.print(c, g, func(w io.Writer) error { return writeGroup(w, &g) })
			},
		}
		c.Flags().StringVar(&group, "group", "", "group id")
		c.Flags().StringVar(&member, "member", "", "member node name")
		c.Flags().IntVar(&count, "count", 0, "members the group will have (required on join)")
		c.MarkFlagRequired("group")
		c.MarkFlagRequired("member")
		addClient(mc, c)
	}
	addClient(mc, &cobra.Command{
		Use:   "groups",
		Short: "List the multicast groups of a running fabric manager",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			var gs []fm.GroupRecord
			if err := cl.do(http.MethodGet, "/api/mcast", nil, &gs); err != nil {
				return err
			}
			return cl.print(c, gs, func(w io.Writer) error {
				t := cli.NewTable("GROUP", "STATE", "MEMBERS", "COUNT", "ROOT", "HEIGHT", "EDGES")
				for _, g := range gs {
					t.Row(g.ID, g.State, len(g.Members), g.MemberCount, g.Root, g.Height, len(g.Edges))
				}
				return t.Write(w)
			})
		},
	})
}

// findOrAdd returns the root subcommand with the given name, creating it
// if no other file registered it.
func findOrAdd(name, short string) *cobra.Command {
	for _, c := range root.Commands() {
		if c.Name() == name {
			return c
		}
	}
	c := &cobra.Command{Use: name, Short: short}
	root.AddCommand(c)
	return c
}

// client talks to a running service.
type client struct {
	server    string
	tokenFile string
	json      bool
}

func (cl *client) register(c *cobra.Command) {
	def := os.Getenv("ICN_SERVER")
	if def == "" {
		def = "http://127.0.0.1:8080"
	}
	c.Flags().StringVar(&cl.server, "server", def, "fabric manager URL (env ICN_SERVER); the token comes from ICN_TOKEN or --token-file")
	c.Flags().StringVar(&cl.tokenFile, "token-file", "", "file holding the API token (default: ICN_TOKEN, else the token file of the default database)")
	c.Flags().BoolVar(&cl.json, "json", false, "print exact JSON instead of a table")
}

func (cl *client) token() string {
	if cl.tokenFile != "" {
		b, _ := os.ReadFile(cl.tokenFile)
		return strings.TrimSpace(string(b))
	}
	if t := os.Getenv("ICN_TOKEN"); t != "" {
		return t
	}
	b, _ := os.ReadFile(fm.TokenFile(defaultDBPath()))
	return strings.TrimSpace(string(b))
}

func (cl *client) do(method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	u := strings.TrimRight(cl.server, "/") + path
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		return fmt.Errorf("--server %q: %v", cl.server, err)
	}
	req.Header.Set("Authorization", "Bearer "+cl.token())
	req.Header.Set("X-ICN-Actor", "cli@"+hostname())
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := &http.Client{Timeout: 60 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return fmt.Errorf("cannot reach the fabric manager at %s: %v", cl.server, ue.Err)
		}
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return &exitError{code: exitFor(resp.StatusCode), err: fmt.Errorf("%s (HTTP %d)", e.Error, resp.StatusCode)}
		}
		return &exitError{code: exitFor(resp.StatusCode), err: fmt.Errorf("HTTP %d from %s", resp.StatusCode, u)}
	}
	return json.Unmarshal(data, out)
}

func exitFor(code int) int {
	if code == http.StatusConflict {
		return 3
	}
	return 1
}

func (cl *client) print(c *cobra.Command, v any, table func(io.Writer) error) error {
	if cl.json {
		return cli.JSON(stdout(c), v)
	}
	return table(stdout(c))
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}

func writeJob(w io.Writer, j *fm.JobRecord) error {
	return cli.KV(w, "job", strconv.Itoa(j.ID), "state", j.State, "active", strings.Join(j.Active, " "),
		"transit", strings.Join(j.TransitN, " "), "rules", j.Rules, "diameter", j.Stats.Diameter,
		"pi_max / pi_perfect", fmt.Sprintf("%g / %.3f", j.Stats.PiMax, j.Stats.PiPerfect), "deadlock free", j.Stats.DeadlockFree)
}

func writeGroup(w io.Writer, g *fm.GroupRecord) error {
	return cli.KV(w, "group", g.ID, "state", g.State, "members", fmt.Sprintf("%d of %d", len(g.Members), g.MemberCount),
		"root", g.Root, "tree height", g.Height, "tree edges", len(g.Edges))
}

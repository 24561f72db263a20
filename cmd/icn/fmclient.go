package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/icn-hpc/icn/fm"
	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/internal/cli"
	"github.com/spf13/cobra"
)

// clientFlags are the flags of a command that talks to a running fabric
// manager: its instances (--server, a comma-separated list: a leader and
// its standbys; writes sent to a standby follow its redirect to the
// leader), the token and the certificate authority.
type clientFlags struct {
	server    string
	tokenFile string
	cacert    string
	json      bool
	cl        *client.Client
	clFor     [3]string // the flags cl was made for
}

func (f *clientFlags) register(c *cobra.Command) {
	def := os.Getenv("ICN_SERVER")
	if def == "" {
		def = "http://127.0.0.1:8080"
	}
	c.Flags().StringVar(&f.server, "server", def, "fabric manager URL, or several separated by commas (a leader and its standbys; env ICN_SERVER); the token comes from ICN_TOKEN or --token-file")
	c.Flags().StringVar(&f.tokenFile, "token-file", os.Getenv("ICN_TOKEN_FILE"), "file holding the API token (env ICN_TOKEN_FILE; default: ICN_TOKEN, else the token file of the default database)")
	c.Flags().StringVar(&f.cacert, "cacert", os.Getenv("ICN_CACERT"), "PEM file of the certificate authority (or the self-signed certificate) that an https server's certificate must chain to (env ICN_CACERT)")
	c.Flags().BoolVar(&f.json, "json", false, "print exact JSON instead of a table")
}

// newHTTPClient is the clients' HTTP client (timeout 0: none): with a
// cacert file, TLS trusts that file's certificates instead of the
// system's.
func newHTTPClient(cacert string, timeout time.Duration) (*http.Client, error) {
	hc := &http.Client{Timeout: timeout}
	if cacert == "" {
		return hc, nil
	}
	pem, err := os.ReadFile(cacert)
	if err != nil {
		return nil, &exitError{code: 2, err: fmt.Errorf("--cacert: %v", err)}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, &exitError{code: 2, err: fmt.Errorf("--cacert %s: no PEM certificate in the file", cacert)}
	}
	hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	return hc, nil
}

func (f *clientFlags) token() string {
	if f.tokenFile != "" {
		b, _ := os.ReadFile(f.tokenFile)
		return strings.TrimSpace(string(b))
	}
	if t := os.Getenv("ICN_TOKEN"); t != "" {
		return t
	}
	b, _ := os.ReadFile(fm.TokenFile(defaultDBPath()))
	return strings.TrimSpace(string(b))
}

// client returns the fabric manager's client of these flags.
func (f *clientFlags) client() (*client.Client, error) {
	key := [3]string{f.server, f.tokenFile, f.cacert}
	if f.cl != nil && f.clFor == key {
		return f.cl, nil
	}
	hc, err := newHTTPClient(f.cacert, 60*time.Second)
	if err != nil {
		return nil, err
	}
	if f.tokenFile != "" {
		if _, err := os.ReadFile(f.tokenFile); err != nil {
			return nil, &exitError{code: 2, err: fmt.Errorf("--token-file: %v", err)}
		}
	}
	cl := client.New(f.server, f.token())
	if len(cl.Servers) == 0 {
		return nil, &exitError{code: 2, err: fmt.Errorf("--server %q: no address", f.server)}
	}
	for _, s := range cl.Servers {
		if !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
			return nil, &exitError{code: 2, err: fmt.Errorf("--server %q: %q is not an http:// or https:// URL", f.server, s)}
		}
	}
	cl.HTTP, cl.Actor = hc, "cli@"+hostname()
	f.cl, f.clFor = cl, key
	return cl, nil
}

// do sends one request to the fabric manager and decodes its answer into
// out; errors carry the exit status (exitFor). Reads, and writes with a
// request id, are sent again while no instance can take them (a
// takeover).
func (f *clientFlags) do(ctx context.Context, method, path string, body, out any) error {
	cl, err := f.client()
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	safe := method == http.MethodGet
	switch b := body.(type) {
	case client.JobRequest:
		safe = b.RequestID != ""
	case client.McastRequest:
		safe = b.RequestID != ""
	}
	return exitErr(cl.Do(ctx, method, path, body, out, safe), f.server)
}

// exitErr gives a client error its exit status.
func exitErr(err error, server string) error {
	if err == nil {
		return nil
	}
	if code := client.StatusOf(err); code != 0 {
		return &exitError{code: exitFor(code, client.KindOf(err)), err: err}
	}
	if errors.Is(err, client.ErrUnreachable) {
		return &exitError{code: 3, err: fmt.Errorf("cannot reach the fabric manager at %s: %v", server, err)}
	}
	return err
}

// exitFor maps the service's HTTP status and kind of error to an exit
// status: a placement budget too short to find any set is 3 (as icn
// alloc's), another conflict (no room now, a fabric that refuses) a no,
// other 4xx an invalid request (a job that can never be placed
// included), 5xx the environment.
func exitFor(code int, kind string) int {
	switch {
	case kind == client.KindBudget:
		return 3
	case code == http.StatusConflict:
		return 1
	case code >= 500:
		return 3
	}
	return 2
}

func (f *clientFlags) print(w io.Writer, v any, table func(io.Writer) error) error {
	if f.json {
		return cli.JSON(w, v)
	}
	return table(w)
}

// requestID is a new request id: a request sent again with it (after a
// takeover lost its answer) gets the first answer, not a second change.
func requestID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return "cli-" + hex.EncodeToString(b)
}

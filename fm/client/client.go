package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Client talks to a fabric manager: one instance, or a leader and its
// standbys (Servers, tried in order). Reads are answered by any
// instance. A write sent to a standby is answered 307 with the leader's
// address (header X-ICN-Leader and Location), which the client follows
// with its token; while no instance leads (a takeover in progress) or
// none can be reached, a request that is safe to repeat is tried again
// until Retry has passed. Safe to repeat are reads and writes that carry
// a request id (POST /api/jobs, the multicast join: the service answers
// a repeated id with the first outcome, across takeovers); other writes
// are repeated only when they surely did not reach an instance.
type Client struct {
	Servers []string // base URLs, e.g. http://127.0.0.1:8080
	Token   string
	Actor   string       // sent as X-ICN-Actor (the audit log's actor)
	HTTP    *http.Client // nil: one with a 60 s timeout
	// Retry bounds how long a request is tried again while no instance
	// can take it (0: 30 s; negative: no retries).
	Retry time.Duration

	mu     sync.Mutex
	leader string // the leader's base URL, as last learned
}

// New returns a client of the comma-separated server list.
func New(servers, token string) *Client {
	c := &Client{Token: token}
	for _, s := range strings.Split(servers, ",") {
		if s = strings.TrimRight(strings.TrimSpace(s), "/"); s != "" {
			c.Servers = append(c.Servers, s)
		}
	}
	return c
}

// Error is an answer with an error status.
type Error struct {
	Status  int
	Message string
	// Kind is the answer's kind of error (KindBudget, …; "" from a
	// server that does not say).
	Kind string
	URL  string
}

func (e *Error) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
	}
	return fmt.Sprintf("HTTP %d from %s", e.Status, e.URL)
}

// ErrUnreachable marks a request no instance answered.
var ErrUnreachable = errors.New("fabric manager unreachable")

// StatusOf returns the HTTP status of an error answer (0 if err is not
// one).
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// KindOf returns the kind of an error answer ("" if err is not one, or
// its server did not say).
func KindOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

// Leader is the leader's base URL as last learned ("" if none yet).
func (c *Client) Leader() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return defaultHTTP
}

var defaultHTTP = &http.Client{Timeout: 60 * time.Second}

// Get reads path into out (JSON).
func (c *Client) Get(ctx context.Context, path string, out any) error {
	return c.Do(ctx, http.MethodGet, path, nil, out, true)
}

// Do sends a request with a JSON body (nil: none) and decodes the JSON
// answer into out (nil: discarded). safe says the request may be sent
// again after an attempt whose fate is unknown (see Client).
func (c *Client) Do(ctx context.Context, method, path string, body, out any, safe bool) error {
	resp, err := c.Send(ctx, method, path, body, safe)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	if err != nil {
		return fmt.Errorf("%w: reading the answer of %s %s: %v", ErrUnreachable, method, path, err)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("the answer of %s %s is not what this client reads: %v", method, path, err)
	}
	return nil
}

// Send is Do for answers read by the caller: it returns the response of
// a successful request (status below 300), whose body the caller must
// close; an error status comes back as *Error.
func (c *Client) Send(ctx context.Context, method, path string, body any, safe bool) (*http.Response, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if len(c.Servers) == 0 {
		return nil, fmt.Errorf("no fabric manager address given")
	}
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	retry := c.Retry
	if retry == 0 {
		retry = 30 * time.Second
	}
	deadline := time.Now().Add(retry)
	write := method != http.MethodGet && method != http.MethodHead
	var last error
	for round := 0; ; round++ {
		for _, base := range c.order(write) {
			resp, err, again := c.try(ctx, base, method, path, payload, safe)
			if !again {
				return resp, err
			}
			last = err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if retry < 0 || time.Now().After(deadline) {
			return nil, last
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		// A takeover ends within the lease plus a second or two: ask
		// again soon.
		case <-time.After(min(time.Duration(round+1)*100*time.Millisecond, 250*time.Millisecond)):
		}
	}
}

// order lists the servers to try: the leader first for writes, then the
// given list.
func (c *Client) order(write bool) []string {
	c.mu.Lock()
	leader := c.leader
	c.mu.Unlock()
	if !write || leader == "" {
		return c.Servers
	}
	out := []string{leader}
	for _, s := range c.Servers {
		if s != leader {
			out = append(out, s)
		}
	}
	return out
}

// try sends the request to one instance, following its redirect to the
// leader. again says that another instance (or a later round) should
// be tried; err is then why this one did not answer.
func (c *Client) try(ctx context.Context, base, method, path string, payload []byte, safe bool) (resp *http.Response, err error, again bool) {
	for hop := 0; hop < 3; hop++ {
		resp, err := c.send(ctx, base+path, method, payload)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err(), false
			}
			// A request that surely did not arrive may go elsewhere; one
			// that may have been applied only if it is safe to repeat. A
			// certificate that does not verify does not get better.
			again := (safe || notSent(err)) && !badCertificate(err)
			return nil, fmt.Errorf("%w: %s: %v", ErrUnreachable, base, cause(err)), again
		}
		switch {
		case resp.StatusCode == http.StatusTemporaryRedirect || resp.StatusCode == http.StatusPermanentRedirect:
			next := leaderOf(resp, base)
			resp.Body.Close()
			if next == "" || next == base {
				return nil, fmt.Errorf("%w: %s redirects to no usable leader", ErrUnreachable, base), true
			}
			if strings.HasPrefix(base, "https:") && !strings.HasPrefix(next, "https:") {
				return nil, fmt.Errorf("%s redirects to %s: refusing to send the token over plain HTTP", base, next), false
			}
			c.mu.Lock()
			c.leader = next
			c.mu.Unlock()
			base = next
			continue
		case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("X-ICN-Role") != "":
			// An instance that cannot serve the request now: no leader
			// elected yet, or its store unreachable.
			e := errorOf(resp, base+path)
			return nil, e, true
		case resp.StatusCode >= 300:
			return nil, errorOf(resp, base+path), false
		}
		if method != http.MethodGet && resp.Header.Get("X-ICN-Role") == "leader" {
			c.mu.Lock()
			c.leader = base
			c.mu.Unlock()
		}
		return resp, nil, false
	}
	return nil, fmt.Errorf("%w: too many redirects from %s", ErrUnreachable, base), true
}

func (c *Client) send(ctx context.Context, u, method string, payload []byte) (*http.Response, error) {
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if c.Actor != "" {
		req.Header.Set("X-ICN-Actor", c.Actor)
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := *c.httpClient()
	// Redirects are followed here, with the token (net/http drops it
	// when the host changes).
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return hc.Do(req)
}

// leaderOf reads the leader's base URL from a redirect.
func leaderOf(resp *http.Response, base string) string {
	if l := strings.TrimRight(resp.Header.Get("X-ICN-Leader"), "/"); l != "" {
		return l
	}
	loc, err := resp.Location()
	if err != nil {
		return ""
	}
	u := url.URL{Scheme: loc.Scheme, Host: loc.Host}
	return u.String()
}

func errorOf(resp *http.Response, u string) error {
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e struct {
		Error string `json:"error"`
		Kind  string `json:"kind"`
	}
	msg, kind := "", ""
	if json.Unmarshal(data, &e) == nil {
		msg, kind = e.Error, e.Kind
	}
	return &Error{Status: resp.StatusCode, Message: msg, Kind: kind, URL: u}
}

// badCertificate reports whether a transport error is a TLS certificate
// that does not verify (no retry helps).
func badCertificate(err error) bool {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	var rh tls.RecordHeaderError
	return errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci) || errors.As(err, &rh)
}

// notSent reports whether a transport error means the request never
// reached the server (the connection was refused).
func notSent(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// cause strips the URL from a transport error.
func cause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

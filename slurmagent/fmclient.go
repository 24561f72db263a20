package slurmagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/icn-hpc/icn/fm"
)

// Manager is what the agent needs of the fabric manager.
type Manager interface {
	// Fabric returns the fabric: node names (coordinates) by id and the
	// failed nodes.
	Fabric(ctx context.Context) (*fm.FabricView, error)
	// Jobs lists the running jobs.
	Jobs(ctx context.Context) ([]fm.JobRecord, error)
	// Submit places a job; an error wraps ErrNoRoom when the fabric
	// cannot take it now.
	Submit(ctx context.Context, req fm.JobRequest) (*fm.JobRecord, error)
	// Release frees a job's nodes.
	Release(ctx context.Context, id int) error
	// FailNode records a node failure.
	FailNode(ctx context.Context, name string) error
}

// ErrNoRoom marks a placement the fabric cannot take now (HTTP 409: no
// reachable set free, or over the placement budget; 503: the service
// could not store it now); the job waits. Other errors (400: more nodes
// than the fabric has) are the job's own.
var ErrNoRoom = errors.New("no room now")

// ErrUnreachable marks a request that did not reach the fabric manager
// (retried next round; not the job's fault).
var ErrUnreachable = errors.New("fabric manager unreachable")

// Client is the fabric manager's HTTP API.
type Client struct {
	URL   string
	Token string
	HTTP  *http.Client // nil: http.DefaultClient
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.URL, "/")+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("X-ICN-Actor", "slurm-agent")
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUnreachable, c.URL, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error string `json:"error"`
		}
		msg := strings.TrimSpace(string(data))
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		if resp.StatusCode == http.StatusConflict || resp.StatusCode == http.StatusServiceUnavailable {
			return fmt.Errorf("%w: %s", ErrNoRoom, msg)
		}
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, msg)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// Fabric implements Manager.
func (c *Client) Fabric(ctx context.Context) (*fm.FabricView, error) {
	var v fm.FabricView
	return &v, c.do(ctx, "GET", "/api/fabric", nil, &v)
}

// Jobs implements Manager.
func (c *Client) Jobs(ctx context.Context) ([]fm.JobRecord, error) {
	var v []fm.JobRecord
	return v, c.do(ctx, "GET", "/api/jobs", nil, &v)
}

// Submit implements Manager.
func (c *Client) Submit(ctx context.Context, req fm.JobRequest) (*fm.JobRecord, error) {
	var v fm.JobRecord
	if err := c.do(ctx, "POST", "/api/jobs", req, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// Release implements Manager.
func (c *Client) Release(ctx context.Context, id int) error {
	return c.do(ctx, "DELETE", fmt.Sprintf("/api/jobs/%d", id), nil, nil)
}

// FailNode implements Manager.
func (c *Client) FailNode(ctx context.Context, name string) error {
	return c.do(ctx, "POST", "/api/fabric/failures", fm.FailureChange{Node: name}, nil)
}

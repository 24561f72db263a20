package slurmagent

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/icn-hpc/icn/fm/client"
)

// Manager is what the agent needs of the fabric manager.
type Manager interface {
	// Fabric returns the fabric: node names (coordinates) by id and the
	// failed nodes.
	Fabric(ctx context.Context) (*client.FabricView, error)
	// Jobs lists the running jobs.
	Jobs(ctx context.Context) ([]client.JobRecord, error)
	// Job returns one job as it is now (running or released).
	Job(ctx context.Context, id int) (*client.JobRecord, error)
	// Submit places a job; an error wraps ErrNoRoom when the fabric
	// cannot take it now. A request id makes it safe to repeat.
	Submit(ctx context.Context, req client.JobRequest) (*client.JobRecord, error)
	// Release frees a job's nodes.
	Release(ctx context.Context, id int) error
	// FailNode records a node failure.
	FailNode(ctx context.Context, name string) error
}

// ErrNoRoom marks a placement the fabric cannot take now (HTTP 409: no
// reachable set free now, or none found within the placement budget,
// kind "budget"; or 503: the service cannot change anything now); the
// job waits. Other errors (400: a job the fabric can never take, such as
// more nodes than it has) are the job's own.
var ErrNoRoom = errors.New("no room now")

// ErrUnreachable marks a request that did not reach the fabric manager
// (retried next round; not the job's fault).
var ErrUnreachable = errors.New("fabric manager unreachable")

// Client is the fabric manager's HTTP API (one instance, or a leader and
// its standbys: fm/client follows a standby's redirect to the leader).
type Client struct {
	C *client.Client
}

func (c *Client) do(ctx context.Context, method, path string, body, out any, safe bool) error {
	err := c.C.Do(ctx, method, path, body, out, safe)
	switch code := client.StatusOf(err); {
	case err == nil:
		return nil
	case code == http.StatusConflict || code == http.StatusServiceUnavailable:
		return fmt.Errorf("%w: %v", ErrNoRoom, err)
	case code == 0 && errors.Is(err, client.ErrUnreachable):
		return fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	return fmt.Errorf("%s %s: %v", method, path, err)
}

// Fabric implements Manager.
func (c *Client) Fabric(ctx context.Context) (*client.FabricView, error) {
	var v client.FabricView
	return &v, c.do(ctx, "GET", "/api/fabric", nil, &v, true)
}

// Jobs implements Manager.
func (c *Client) Jobs(ctx context.Context) ([]client.JobRecord, error) {
	var v []client.JobRecord
	return v, c.do(ctx, "GET", "/api/jobs", nil, &v, true)
}

// Job implements Manager.
func (c *Client) Job(ctx context.Context, id int) (*client.JobRecord, error) {
	var v client.JobRecord
	if err := c.do(ctx, "GET", fmt.Sprintf("/api/jobs/%d", id), nil, &v, true); err != nil {
		return nil, err
	}
	return &v, nil
}

// Submit implements Manager.
func (c *Client) Submit(ctx context.Context, req client.JobRequest) (*client.JobRecord, error) {
	var v client.JobRecord
	if err := c.do(ctx, "POST", "/api/jobs", req, &v, req.RequestID != ""); err != nil {
		return nil, err
	}
	return &v, nil
}

// Release implements Manager.
func (c *Client) Release(ctx context.Context, id int) error {
	return c.do(ctx, "DELETE", fmt.Sprintf("/api/jobs/%d", id), nil, nil, false)
}

// FailNode implements Manager.
func (c *Client) FailNode(ctx context.Context, name string) error {
	return c.do(ctx, "POST", "/api/fabric/failures", client.FailureChange{Node: name}, nil, false)
}

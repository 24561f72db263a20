package fm

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/icn-hpc/icn/topology"
)

// gatedMeasure replaces a service's metrics computation by one that
// waits for release (or for its context to end) before computing, and
// reports each computation's end on ended (the context's error, nil when
// it computed).
type gatedMeasure struct {
	release chan struct{}
	started chan uint64 // failed links of the fabric being measured
	ended   chan error
}

func gateMetrics(s *Service) *gatedMeasure {
	gm := &gatedMeasure{release: make(chan struct{}), started: make(chan uint64, 8), ended: make(chan error, 8)}
	s.fm.mu.Lock()
	s.fm.measure = func(ctx context.Context, g *topology.Graph) (topology.Metrics, error) {
		gm.started <- uint64(len(g.FailedLinks()))
		select {
		case <-gm.release:
		case <-ctx.Done():
			gm.ended <- ctx.Err()
			return topology.Metrics{}, ctx.Err()
		}
		m, err := measureFabric(ctx, g)
		gm.ended <- err
		return m, err
	}
	s.fm.mu.Unlock()
	return gm
}

// TestMetricsPerFabricVersion: the metrics answered for each fabric
// version are those topology.Measure gives for that fabric, labelled with
// its version and failures; a failure's answer says pending (with the
// previous figures, labelled as such) until its computation ends, then
// gives the new figures, over HTTP too.
func TestMetricsPerFabricVersion(t *testing.T) {
	s, tok := openTest(t, t.TempDir(), "torus:4x4x4", nil)
	defer s.Close()
	ctx := context.Background()
	check := func(v MetricsView, ver uint64, links []string) {
		t.Helper()
		if !v.Current || v.Pending || v.For == nil || v.Metrics == nil || v.For.Version != ver || v.FabricVersion != ver ||
			!slices.Equal(v.For.FailedLinks, links) || len(v.For.FailedNodes) != 0 {
			t.Fatalf("metrics view %+v (for %+v), want current for version %d with failed links %v", v, v.For, ver, links)
		}
		s.mu.RLock()
		g := s.g
		s.mu.RUnlock()
		if want := topology.Measure(g, topology.MetricsOptions{}); !reflect.DeepEqual(*v.Metrics, want) {
			t.Fatalf("version %d: metrics %+v, topology.Measure gives %+v", ver, *v.Metrics, want)
		}
	}
	v0, err := s.WaitMetrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check(v0, 0, []string{})

	gm := gateMetrics(s)
	if _, err := s.ChangeFailure("test", FailureChange{Link: "0.0.0+X"}); err != nil {
		t.Fatal(err)
	}
	if n := <-gm.started; n != 1 {
		t.Fatalf("computing a fabric with %d failed links, want 1", n)
	}
	for _, v := range []MetricsView{s.Metrics(), s.metricsWithin(0)} {
		if v.Current || !v.Pending || v.FabricVersion != 1 || v.For == nil || v.For.Version != 0 || !reflect.DeepEqual(v.Metrics, v0.Metrics) {
			t.Fatalf("during the computation: %+v (for %+v), want pending with version 0's figures", v, v.For)
		}
	}
	srv := httptest.NewServer(s.Handler(HandlerOptions{}))
	defer srv.Close()
	c := &apiClient{t: t, url: srv.URL, token: tok}
	code, body := c.do("GET", "/api/fabric/metrics", nil)
	if code != 200 || body["pending"] != true || body["current"] != false || body["fabric_version"] != 1.0 ||
		body["for"].(map[string]any)["version"] != 0.0 || body["diameter"] != float64(v0.Diameter) {
		t.Fatalf("GET /api/fabric/metrics during the computation: %d %v", code, body)
	}
	close(gm.release)
	v1, err := s.WaitMetrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check(v1, 1, []string{"0.0.0+X"})
	if reflect.DeepEqual(v1.Metrics, v0.Metrics) {
		t.Error("metrics unchanged by a failed link")
	}
	code, body = c.do("GET", "/api/fabric/metrics", nil)
	if code != 200 || body["pending"] != false || body["current"] != true || body["links"] != float64(v1.Links) ||
		!reflect.DeepEqual(body["for"].(map[string]any)["failed_links"], []any{"0.0.0+X"}) {
		t.Fatalf("GET /api/fabric/metrics after the computation: %d %v", code, body)
	}

	// A restart with the link failed computes that fabric's metrics.
	dir := filepath.Dir(s.store.Path())
	s.Close()
	s, _ = openTest(t, dir, "", nil)
	defer s.Close()
	v, err := s.WaitMetrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check(v, 0, []string{"0.0.0+X"})
}

// TestMetricsComputationStops: a computation in flight stops when a newer
// fabric version arrives (the newer one is computed) and when the service
// closes (Close waits for it).
func TestMetricsComputationStops(t *testing.T) {
	s, _ := openTest(t, t.TempDir(), "torus:4x4x4", nil)
	if _, err := s.WaitMetrics(context.Background()); err != nil {
		t.Fatal(err)
	}
	gm := gateMetrics(s)
	if _, err := s.ChangeFailure("test", FailureChange{Link: "0.0.0+X"}); err != nil {
		t.Fatal(err)
	}
	<-gm.started
	if _, err := s.ChangeFailure("test", FailureChange{Link: "1.0.0+Y"}); err != nil {
		t.Fatal(err)
	}
	if err := <-gm.ended; err != context.Canceled {
		t.Fatalf("the computation of version 1 ended with %v, want context.Canceled", err)
	}
	if n := <-gm.started; n != 2 {
		t.Fatalf("computing a fabric with %d failed links, want 2", n)
	}
	if v := s.metricsWithin(0); !v.Pending || v.FabricVersion != 2 || v.For.Version != 0 {
		t.Fatalf("during version 2's computation: %+v (for %+v)", v, v.For)
	}
	done := make(chan error)
	go func() { done <- s.Close() }()
	if err := <-gm.ended; err != context.Canceled {
		t.Fatalf("the computation in flight at Close ended with %v, want context.Canceled", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	select {
	case <-gm.started:
		t.Error("a computation started after Close")
	default:
	}
	if v := s.metricsWithin(time.Second); v.Pending || v.Current {
		t.Errorf("after Close: %+v", v)
	}
}

package fm

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the service's Prometheus collectors, kept on a private
// registry so several services (tests) can coexist.
type metrics struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec
	allocation prometheus.Histogram
	// allocationCut counts selections that the placement budget cut
	// short (the best set found in time was taken).
	allocationCut prometheus.Counter
}

func newMetrics(s *Service) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "icn_http_requests_total", Help: "HTTP requests by route and status code.",
	}, []string{"route", "code"})
	m.allocation = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "icn_allocation_seconds", Help: "Time to select a node set for a job.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
	})
	m.allocationCut = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "icn_allocation_cut_total", Help: "Node selections cut short by the placement budget (the best set found in time was taken).",
	})
	groups := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "icn_multicast_groups", Help: "Multicast groups (all states).",
	}, func() float64 { return float64(s.mc.count()) })
	groupsBy := newGroupStateCollector(s)
	efi := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "icn_link_efi_max", Help: "Largest edge forwarding index (multicast groups per link).",
	}, func() float64 { return float64(s.mc.maxEFI()) })
	failed := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "icn_failed_links", Help: "Links currently marked failed.",
	}, func() float64 {
		s.mu.RLock()
		defer s.mu.RUnlock()
		return float64(len(s.fabric.FailedLinks))
	})
	failedNodes := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "icn_failed_nodes", Help: "Nodes currently marked failed.",
	}, func() float64 {
		s.mu.RLock()
		defer s.mu.RUnlock()
		return float64(len(s.fabric.FailedNodes))
	})
	running := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "icn_jobs_running", Help: "Running jobs.",
	}, func() float64 {
		s.mu.RLock()
		defer s.mu.RUnlock()
		return float64(len(s.jobs))
	})
	broken := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "icn_jobs_broken", Help: "Running jobs without a working routing table (migrate them).",
	}, func() float64 {
		s.mu.RLock()
		defer s.mu.RUnlock()
		n := 0
		for _, j := range s.jobs {
			if j.Routing == RouteBroken {
				n++
			}
		}
		return float64(n)
	})
	busy := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "icn_nodes_busy", Help: "Nodes held by running jobs.",
	}, func() float64 {
		s.mu.RLock()
		defer s.mu.RUnlock()
		if s.state == nil {
			return 0
		}
		return float64(s.state.Busy())
	})
	m.reg.MustRegister(m.requests, m.allocation, m.allocationCut, groups, groupsBy, efi, failed, failedNodes, running, broken, busy,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// groupStateCollector reports groups per protocol state.
type groupStateCollector struct {
	s    *Service
	desc *prometheus.Desc
}

func newGroupStateCollector(s *Service) *groupStateCollector {
	return &groupStateCollector{s: s, desc: prometheus.NewDesc("icn_multicast_groups_by_state",
		"Multicast groups by join/leave protocol state.", []string{"state"}, nil)}
}

func (c *groupStateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *groupStateCollector) Collect(ch chan<- prometheus.Metric) {
	for state, n := range c.s.mc.byState() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), state)
	}
}

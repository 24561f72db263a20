package api

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

func newMetrics(svc Backend) *metrics {
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
	m.reg.MustRegister(m.requests, m.allocation, m.allocationCut, &stateCollector{svc: svc},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// stateCollector reports the service's state at each scrape: its
// counts (jobs, nodes, failures, groups) and its role in a replicated
// store.
type stateCollector struct{ svc Backend }

var (
	descGroups        = prometheus.NewDesc("icn_multicast_groups", "Multicast groups (all states).", nil, nil)
	descGroupsByState = prometheus.NewDesc("icn_multicast_groups_by_state", "Multicast groups by join/leave protocol state.", []string{"state"}, nil)
	descEFI           = prometheus.NewDesc("icn_link_efi_max", "Largest edge forwarding index (multicast groups per link).", nil, nil)
	descFailedLinks   = prometheus.NewDesc("icn_failed_links", "Links currently marked failed.", nil, nil)
	descFailedNodes   = prometheus.NewDesc("icn_failed_nodes", "Nodes currently marked failed.", nil, nil)
	descRunning       = prometheus.NewDesc("icn_jobs_running", "Running jobs.", nil, nil)
	descBroken        = prometheus.NewDesc("icn_jobs_broken", "Running jobs without a working routing table (migrate them).", nil, nil)
	descPending       = prometheus.NewDesc("icn_jobs_table_pending", "Running jobs placed with their routing table pending: built and verified after the placement's answer (they must not start yet).", nil, nil)
	descBusy          = prometheus.NewDesc("icn_nodes_busy", "Nodes held by running jobs.", nil, nil)
	descRole          = prometheus.NewDesc("icn_fm_role", "1 for the instance's role: leader (it takes changes) or standby (it follows the leader through the store).", []string{"role"}, nil)
	descTerm          = prometheus.NewDesc("icn_fm_term", "Leadership term of the leader this instance knows (the etcd revision its candidacy was created at; 0 on a bbolt store).", nil, nil)
	descRevision      = prometheus.NewDesc("icn_fm_store_revision", "Store revision the instance's state reflects (etcd).", nil, nil)
	descLag           = prometheus.NewDesc("icn_fm_revision_lag", "Revisions the instance's state is behind the store (a standby's lag).", nil, nil)
	descStale         = prometheus.NewDesc("icn_fm_stale", "1 when the instance could not reach its store lately (its answers may be behind).", nil, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descGroups, descGroupsByState, descEFI, descFailedLinks, descFailedNodes,
		descRunning, descBroken, descPending, descBusy, descRole, descTerm, descRevision, descLag, descStale} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.svc.Stats()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descGroups, float64(st.Groups))
	for state, n := range st.GroupsByState {
		gauge(descGroupsByState, float64(n), state)
	}
	gauge(descEFI, float64(st.MaxEFI))
	gauge(descFailedLinks, float64(st.FailedLinks))
	gauge(descFailedNodes, float64(st.FailedNodes))
	gauge(descRunning, float64(st.JobsRunning))
	gauge(descBroken, float64(st.JobsBroken))
	gauge(descPending, float64(st.JobsPending))
	gauge(descBusy, float64(st.NodesBusy))
	h := c.svc.Health()
	for _, role := range []string{"leader", "standby"} {
		v := 0.0
		if h.Role == role {
			v = 1
		}
		gauge(descRole, v, role)
	}
	gauge(descTerm, float64(h.Term))
	gauge(descRevision, float64(h.Revision))
	gauge(descLag, float64(h.Lag))
	stale := 0.0
	if h.Stale {
		stale = 1
	}
	gauge(descStale, stale)
}

package fm

import (
	"context"
	"io"

	"github.com/icn-hpc/icn/fm/client"
)

// Groups returns the multicast groups by id.
func (s *Service) Groups() []client.GroupRecord { return s.mc.list() }

// Group returns one multicast group.
func (s *Service) Group(id string) (*client.GroupRecord, error) { return s.mc.get(id) }

// Join handles a multicast join (the seed's HPC protocol: every join
// carries the group's member count); a request id makes it safe to
// repeat.
func (s *Service) Join(ctx context.Context, actor string, req client.McastRequest) (*client.GroupRecord, error) {
	return s.mc.join(ctx, actor, req)
}

// Leave handles a multicast leave.
func (s *Service) Leave(ctx context.Context, actor string, req client.McastRequest) (*client.GroupRecord, error) {
	return s.mc.leave(ctx, actor, req)
}

// Backup writes a consistent copy of a bbolt store to w (see
// store.Store.Backup).
func (s *Service) Backup(w io.Writer, size func(int64)) (int64, error) {
	return s.store.Backup(w, size)
}

// Stats returns the counts the service's metrics report.
func (s *Service) Stats() client.ServiceStats {
	v := s.mc.current()
	st := client.ServiceStats{Groups: len(v.list), GroupsByState: v.byState, MaxEFI: v.maxEFI}
	s.mu.RLock()
	defer s.mu.RUnlock()
	st.FailedLinks, st.FailedNodes = len(s.fabric.FailedLinks), len(s.fabric.FailedNodes)
	st.JobsRunning = len(s.jobs)
	for _, j := range s.jobs {
		switch j.Routing {
		case client.RouteBroken:
			st.JobsBroken++
		case client.RoutePending:
			st.JobsPending++
		}
	}
	if s.state != nil {
		st.NodesBusy = s.state.Busy()
	}
	return st
}

// ObserveAllocations has fn called with the time of every node
// selection and whether the placement budget cut it short (metrics).
func (s *Service) ObserveAllocations(fn func(seconds float64, cut bool)) { s.observe.Store(&fn) }

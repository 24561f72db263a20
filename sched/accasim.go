package sched

import "math"

// startAccasim makes one scheduling pass by accasim's EASYBackfilling
// rule (RuleAccasim), the rule of that simulator's EASYBackfilling class
// with its first-fit allocator:
//
//  1. If the head job is blocked and its retry time has come, it is tried;
//     if it starts, it is blocked no more.
//  2. If no job is blocked, jobs start in queue order until one does not
//     fit; that one is blocked, and its retry time is the earliest time
//     at which it has a placement when the running jobs (those just
//     started included) end in order of their requested end times. The
//     retry time is computed once per blocked job, never revised.
//  3. While the head is blocked, every later job in queue order starts
//     if it fits now, whatever its requested time: the retry time
//     protects no nodes.
//
// A pass changes nothing when repeated at the same time (fewer nodes are
// free after it, and the blocked head is not tried twice), so it is made
// once per event.
func (s *simulation) startAccasim() error {
	if s.blocked && s.retryAt <= s.t {
		ok, err := s.tryStart(0, nil)
		if err != nil {
			return err
		}
		s.blocked = !ok // started, or dropped because it never fits
	}
	if !s.blocked {
		if err := s.startInOrder(); err != nil {
			return err
		}
		if len(s.queue) == 0 {
			return nil
		}
		s.resv = nil
		r, err := s.reserve()
		if err != nil {
			return err
		}
		s.blocked, s.retryAt = true, r.shadow
	}
	return s.startAnyThatFits()
}

// startInOrder starts jobs from the head of the queue until one does not
// fit (or the queue is empty).
func (s *simulation) startInOrder() error {
	for len(s.queue) > 0 {
		ok, err := s.tryStart(0, nil)
		if err != nil || !ok {
			return err
		}
	}
	return nil
}

// startAnyThatFits starts, in queue order, every job behind the head that
// fits now.
func (s *simulation) startAnyThatFits() error {
	for qi := 1; qi < len(s.queue); {
		ok, err := s.tryStart(qi, nil)
		if err != nil {
			return err
		}
		if !ok {
			qi++ // a job that started or was dropped left queue[qi]
		}
	}
	return nil
}

// waitingForRetry reports whether the blocked head (RuleAccasim) waits
// for a retry time still to come.
func (s *simulation) waitingForRetry() bool {
	return s.cfg.Policy.accasim() && s.blocked && len(s.queue) > 0 && s.retryAt > s.t
}

// plannedTime is the run time the scheduler plans a job with: its
// requested time, or under RuleAccasim the trace's requested time even
// when the job runs longer; with a start delay, at least the delay and
// the run time (the time the job holds its nodes).
func (s *simulation) plannedTime(j Job) float64 {
	if s.cfg.Policy.accasim() && j.TraceRequested > 0 {
		return j.TraceRequested
	}
	if d := s.startDelay(j); d > 0 {
		return math.Max(j.Requested, d+j.Runtime)
	}
	return j.Requested
}

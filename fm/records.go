package fm

import (
	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/fm/client"
)

// selectionOf says how a node set was chosen (the job record's Selection).
func selectionOf(res *alloc.Result) *client.Selection {
	return &client.Selection{Exhaustive: res.Exhaustive, Settled: res.Settled, Examined: res.Examined, Complete: res.Complete, Cut: res.Cut, Seconds: res.Seconds}
}

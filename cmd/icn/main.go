// Command icn is the command-line front end of the icn toolkit: topologies,
// torus routing, node allocation, multicast, multiring design, simulation,
// one-sided communication and the fabric-manager service. Each command group
// lives in its own file and registers itself on the root command; the work
// itself is done by the domain packages.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

var root = &cobra.Command{
	Use:           "icn",
	Short:         "Interconnection networks for supercomputers: design, route, place, simulate",
	SilenceUsage:  true,
	SilenceErrors: true,
}

// exitError carries a specific exit status (e.g. 1 for "verified: violations
// found", 2 for bad input) through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func main() {
	if err := root.Execute(); err != nil {
		msg := err.Error()
		fmt.Fprintln(os.Stderr, "icn: "+oneLine(msg))
		var ee *exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		os.Exit(1)
	}
}

// oneLine keeps an error message on one line.
func oneLine(s string) string {
	out := []rune{}
	for _, r := range s {
		if r == '\n' || r == '\r' {
			r = ' '
		}
		out = append(out, r)
	}
	return string(out)
}

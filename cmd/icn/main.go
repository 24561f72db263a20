// Command icn is the command-line front end of the icn toolkit: topologies,
// torus routing, node allocation, multicast, multiring design, simulation,
// one-sided communication and the fabric-manager service. Each command group
// lives in its own file as a constructor (newXxxCmd) with an options struct
// and a run function; newRootCmd assembles the tree. The work itself is done
// by the domain packages.
package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"syscall"

	"github.com/icn-hpc/icn/internal/atomicfile"
	"github.com/spf13/cobra"
)

// newRootCmd assembles the command tree: one constructor per command group.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "icn",
		Short:         "Interconnection networks for supercomputers: design, route, place, simulate",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// A flag that does not parse is bad input: exit status 2, like an
	// unknown command.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{code: 2, err: err} })
	root.AddCommand(
		newCollectiveCmd(),
		newDesignCmd(),
		newMultiringCmd(),
		newRouteCmd(),
		newReachCmd(),
		newExperimentCmd(),
		newServeCmd(),
		newJobCmd(),
		newTopoCmd(),
		newFabricCmd(),
		newMcastCmd(),
		newSimCmd(),
		newBenchCmd(),
		newShmemCmd(),
		newAllocCmd(),
		newSchedCmd(),
		newSlurmCmd(),
	)
	markOutputs(root)
	return root
}

// Exit statuses, the same for every command:
//
//	0  success;
//	1  the command ran and the answer is no: a check or verification found
//	   violations, a set is unreachable, no allocation now, the
//	   simulation deadlocked, a parallel job failed;
//	2  the request is invalid: flags or arguments, a malformed spec or
//	   file, an unknown node or name, a request too large or one that can
//	   never be met (no allocation even on the machine without jobs);
//	3  the environment failed or ran out of time: the service unreachable
//	   or failing, a file that cannot be written (disk full, no
//	   permission), a tool icn drives missing or failing, a node-selection
//	   budget that ended before any set was found (icn alloc, or the
//	   service's 409 of kind "budget").
//
// An exitError carries one of them through cobra; any other error is a
// 2, unless it wraps an environment failure (exitCode).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func main() {
	root := newRootCmd()
	for _, c := range root.Commands() {
		strictGroups(c)
	}
	if err := root.Execute(); err != nil {
		msg := err.Error()
		fmt.Fprintln(os.Stderr, "icn: "+oneLine(msg))
		os.Exit(exitCode(err))
	}
}

// exitCode is the exit status for err (see exitError).
func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ue *url.Error
	var oe *net.OpError
	var xe *exec.ExitError
	var we *atomicfile.Error
	switch {
	case errors.As(err, &we), errors.As(err, &ue), errors.As(err, &oe), errors.As(err, &xe), errors.Is(err, exec.ErrNotFound),
		errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EROFS), errors.Is(err, syscall.EIO),
		errors.Is(err, fs.ErrPermission), errors.Is(err, context.DeadlineExceeded):
		return 3
	}
	return 2
}

// strictGroups makes every command group (a command with subcommands and
// no action of its own) reject an unknown subcommand with an error instead
// of printing its help and exiting 0.
func strictGroups(c *cobra.Command) {
	for _, sub := range c.Commands() {
		strictGroups(sub)
	}
	if c.Runnable() || !c.HasSubCommands() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return &exitError{code: 2, err: fmt.Errorf("unknown command %q for %q (see %s --help)", args[0], c.CommandPath(), c.CommandPath())}
		}
		return c.Help()
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

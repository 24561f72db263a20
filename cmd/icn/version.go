package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// commit names the commit when the build information lacks it (go run,
// -buildvcs=false): go build -ldflags "-X main.commit=$(git rev-parse HEAD)".
var commit string

// buildVersion describes the binary from its build information: the
// module's version ("(devel)" for a build from a work tree), the commit
// it was built from (with "+modified" for uncommitted changes) and its
// time, and the Go release.
func buildVersion() string {
	version, rev, when, modified := "unknown", "unknown", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if rev == "unknown" && commit != "" {
		rev = commit
	}
	if modified {
		rev += "+modified"
	}
	out := fmt.Sprintf("icn %s commit %s", version, rev)
	if when != "" {
		out += " (" + when + ")"
	}
	return out + " " + runtime.Version()
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print icn's module version, the commit it was built from and the Go release (as icn --version)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return printVersion(stdout(c))
		},
	}
}

func printVersion(w io.Writer) error {
	_, err := fmt.Fprintln(w, buildVersion())
	return err
}

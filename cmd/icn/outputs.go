package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/icn-hpc/icn/internal/atomicfile"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// outputFlags are the flags that name an output file (or, "dir", a
// directory the files go into, created if missing), by command path. The
// root command checks every one given before the command starts its work
// (checkOutputs), so that a missing directory, a read-only place, a
// directory or a socket given as a file ends the command at once with exit
// status 3 instead of after the routing or the simulation; the writers
// themselves go through atomicfile, which writes a device or a pipe in
// place and never renames over it. TestOutputFlagsListed keeps this table
// complete.
var outputFlags = map[string]map[string]string{
	"icn experiment balance":           {"plot": "file"},
	"icn experiment faults":            {"plot": "file"},
	"icn fabric route":                 {"lft-out": "file", "lanes-out": "file"},
	"icn mcast":                        {"plot": "file", "trees-out": "file"},
	"icn mcast experiment":             {"plot": "file"},
	"icn multiring family":             {"plot": "file"},
	"icn route":                        {"export": "file", "output": "file"},
	"icn sched experiment solutions":   {"plot": "file"},
	"icn sched experiment utilization": {"plot": "file"},
	"icn sched merge":                  {"plot": "file"},
	"icn sched simulate":               {"plot": "file", "schedule-out": "file"},
	"icn serve":                        {"lft-out": "file"},
	"icn sim":                          {"plot": "file"},
	"icn sim sweep":                    {"plot": "file"},
	"icn slurm install":                {"dir": "dir"},
	"icn slurm topology":               {"out": "dir"},
	"icn topo export":                  {"output": "file"},
	"icn topo import":                  {"to-json": "file"},
}

// outputAnnotation marks a flag of outputFlags.
const outputAnnotation = "icn-output"

// markOutputs annotates the flags of outputFlags in the tree under root and
// makes root check them before any command runs.
func markOutputs(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for name, kind := range outputFlags[c.CommandPath()] {
			if c.Flags().Lookup(name) != nil {
				_ = c.Flags().SetAnnotation(name, outputAnnotation, []string{kind})
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	// after any hook the root already has
	prev, prevE := root.PersistentPreRun, root.PersistentPreRunE
	root.PersistentPreRun = nil
	root.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if prevE != nil {
			if err := prevE(c, args); err != nil {
				return err
			}
		} else if prev != nil {
			prev(c, args)
		}
		return checkOutputs(c)
	}
}

// checkOutputs checks every output flag given to c (atomicfile.Check and
// CheckDir): one line naming the flag, exit status 3.
func checkOutputs(c *cobra.Command) error {
	var err error
	c.Flags().VisitAll(func(f *pflag.Flag) {
		kind := f.Annotations[outputAnnotation]
		if err != nil || !f.Changed || len(kind) == 0 {
			return
		}
		v := f.Value.String()
		if v == "" || v == "-" {
			return
		}
		switch {
		case kind[0] == "dir":
			err = atomicfile.CheckDir(v)
		case f.Name == "plot" && !plotExtOK(v):
			err = &exitError{code: 2, err: fmt.Errorf("--plot %s: the extension must be .svg, .png or .pdf", v)}
			return
		default:
			err = atomicfile.Check(v)
		}
		if err != nil {
			err = &exitError{code: 3, err: fmt.Errorf("--%s: %w", f.Name, err)}
		}
	})
	return err
}

// plotExtOK reports whether path names a chart format SavePlot writes.
func plotExtOK(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg", ".png", ".pdf":
		return true
	}
	return false
}

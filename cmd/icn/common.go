package main

import (
	"io"
	"os"

	"github.com/icn-hpc/icn/internal/cli"
	"github.com/spf13/cobra"
)

// output is the --json flag every command shares.
type output struct {
	json bool
}

func (o *output) register(c *cobra.Command) {
	c.Flags().BoolVar(&o.json, "json", false, "print exact JSON instead of a table")
}

// print writes v as JSON when --json is set, otherwise calls table.
func (o *output) print(w io.Writer, v any, table func(io.Writer) error) error {
	if o.json {
		return cli.JSON(w, v)
	}
	return table(w)
}

func stdout(c *cobra.Command) io.Writer { return c.OutOrStdout() }

// readArgFile reads a value that may be given as @FILE.
func readArgFile(v string) (string, error) {
	if len(v) > 1 && v[0] == '@' {
		b, err := os.ReadFile(v[1:])
		return string(b), err
	}
	return v, nil
}

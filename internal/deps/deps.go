//go:build tools

// Package deps pins the module's third-party dependencies so that go.mod and
// go.sum stay complete while packages adopt them one at a time.
package deps

import (
	_ "github.com/chromedp/chromedp"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/cobra"
	_ "go.etcd.io/bbolt"
	_ "go.yaml.in/yaml/v3"
	_ "gonum.org/v1/gonum/graph/simple"
	_ "gonum.org/v1/gonum/mat"
	_ "gonum.org/v1/gonum/stat"
	_ "gonum.org/v1/plot"
	_ "gonum.org/v1/plot/plotter"
	_ "gonum.org/v1/plot/vg"
	_ "pgregory.net/rapid"
)

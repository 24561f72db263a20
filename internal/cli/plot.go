package cli

import (
	"fmt"
	"image/color"
	"io"
	"path/filepath"
	"strings"

	"github.com/icn-hpc/icn/internal/atomicfile"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Series is one named curve of a line chart.
type Series struct {
	Name string
	X, Y []float64
}

// Chart describes a line chart or a grouped bar chart.
type Chart struct {
	Title, XLabel, YLabel string
	Series                []Series
	// Bars draws the series as grouped bars over categorical X labels.
	Bars       bool
	Categories []string
	LogY       bool
}

// SavePlot writes the chart to path (through atomicfile.Write); the
// extension (.svg, .png, .pdf) chooses the format.
func SavePlot(c Chart, path string) error {
	ext := strings.ToLower(filepath.Ext(path))
	switch ext {
	case ".svg", ".png", ".pdf":
	default:
		return fmt.Errorf("plot file %q: extension must be .svg, .png or .pdf", path)
	}
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.YLabel
	if c.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{}
	}
	p.Legend.Top = true
	if c.Bars {
		w := vg.Points(60 / float64(max(1, len(c.Series))))
		for i, s := range c.Series {
			vals := plotter.Values(s.Y)
			b, err := plotter.NewBarChart(vals, w)
			if err != nil {
				return err
			}
			b.Color = plotutil.Color(i)
			b.LineStyle.Width = 0
			b.Offset = w * vg.Length(float64(i)-float64(len(c.Series)-1)/2)
			p.Add(b)
			p.Legend.Add(s.Name, b)
		}
		p.NominalX(c.Categories...)
	} else {
		for i, s := range c.Series {
			pts := make(plotter.XYs, len(s.X))
			for k := range s.X {
				pts[k].X, pts[k].Y = s.X[k], s.Y[k]
			}
			l, sc, err := plotter.NewLinePoints(pts)
			if err != nil {
				return err
			}
			l.Color = plotutil.Color(i)
			sc.Color = plotutil.Color(i)
			sc.Shape = plotutil.Shape(i)
			p.Add(l, sc)
			p.Legend.Add(s.Name, l, sc)
		}
		p.Add(plotter.NewGrid())
	}
	p.BackgroundColor = color.White
	wt, err := p.WriterTo(8*vg.Inch, 5*vg.Inch, ext[1:])
	if err != nil {
		return err
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := wt.WriteTo(w)
		return err
	})
}

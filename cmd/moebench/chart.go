package main

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// writeChart draws chart.png: per config, instructions per request and host CPU per request
// as multiples of B0 (router only), side by side, with a line at 1.
func writeChart(rep *Report, path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("moe-host cost per request vs router only (B0) — %s, %s", rep.Machine.Date, rep.Machine.Commit)
	p.Y.Label.Text = "× B0"
	p.Y.Min = 0

	var names []string
	var instr, cpu plotter.Values
	for _, r := range rep.Results {
		names = append(names, r.ID+" "+r.Name)
		instr = append(instr, r.Summary.InstrVsB0)
		cpu = append(cpu, r.Summary.CPUVsB0)
	}
	w := vg.Points(18)
	series := []struct {
		label string
		vals  plotter.Values
		col   int
	}{
		{"instructions/request (callgrind)", instr, 0},
		{"host CPU/request (wrk)", cpu, 1},
	}
	top := 1.0
	for i, s := range series {
		bars, err := plotter.NewBarChart(s.vals, w)
		if err != nil {
			return err
		}
		bars.Color = plotutil.Color(s.col)
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(float64(i)-0.5) * w
		p.Add(bars)
		p.Legend.Add(s.label, bars)
		// The value above each bar.
		xys := make(plotter.XYs, len(s.vals))
		texts := make([]string, len(s.vals))
		for j, v := range s.vals {
			xys[j] = plotter.XY{X: float64(j), Y: v}
			if v > 0 {
				texts[j] = fmt.Sprintf("%.2f", v)
			}
			top = max(top, v)
		}
		labels, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
		if err != nil {
			return err
		}
		for j := range labels.TextStyle {
			labels.TextStyle[j].XAlign = draw.XCenter
			labels.TextStyle[j].Font.Size = vg.Points(8)
		}
		labels.Offset = vg.Point{X: bars.Offset, Y: vg.Points(3)}
		p.Add(labels)
	}
	p.Y.Max = top * 1.15
	one := plotter.NewFunction(func(float64) float64 { return 1 })
	one.Color = color.Gray{Y: 80}
	one.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(one)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(10)
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	p.X.Tick.Label.Rotation = 0.3
	p.X.Tick.Label.XAlign = draw.XRight
	return p.Save(10*vg.Inch, 5*vg.Inch, path)
}

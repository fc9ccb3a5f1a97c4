package report

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
)

// Point is one (x, y) of a Series.
type Point struct{ X, Y float64 }

// Series is one line of a line chart; series of one Unit share a panel
// and its y axis.
type Series struct {
	Name, Unit string
	Points     []Point
}

// Line chart geometry, in pixels.
const (
	linesWidth  = 1200
	linesLeft   = 110
	linesRight  = linesWidth - 30
	panelH      = 260
	panelGap    = 70
	linesHeader = 40
	yTicks      = 4
)

// WriteLineChart draws series over a common x axis (xLabel), one panel
// per unit, stacked, each panel's y axis from 0 to its largest value
// (the soak's RSS and descriptors over time), and encodes it as PNG.
func WriteLineChart(w io.Writer, title, xLabel string, series []Series) error {
	var (
		colBackground = color.RGBA{255, 255, 255, 255}
		colText       = color.RGBA{30, 30, 30, 255}
		colGrid       = color.RGBA{220, 220, 220, 255}
	)
	var units []string
	byUnit := map[string][]int{}
	xMax := 0.0
	for i, s := range series {
		if _, ok := byUnit[s.Unit]; !ok {
			units = append(units, s.Unit)
		}
		byUnit[s.Unit] = append(byUnit[s.Unit], i)
		for _, p := range s.Points {
			xMax = math.Max(xMax, p.X)
		}
	}
	if xMax == 0 {
		xMax = 1
	}
	height := linesHeader + len(units)*(panelH+panelGap)
	img := image.NewRGBA(image.Rect(0, 0, linesWidth, height))
	draw.Draw(img, img.Bounds(), &image.Uniform{colBackground}, image.Point{}, draw.Src)
	drawText(img, 10, 10, title, colText)
	xOfPoint := func(x float64) int { return linesLeft + int(math.Round(x/xMax*float64(linesRight-linesLeft))) }

	for pi, unit := range units {
		top := linesHeader + pi*(panelH+panelGap) + 30
		bottom := top + panelH
		yMax := 0.0
		for _, i := range byUnit[unit] {
			for _, p := range series[i].Points {
				yMax = math.Max(yMax, p.Y)
			}
		}
		yMax = niceCeil(yMax)
		// Legend, grid, axes.
		x := linesLeft
		for _, i := range byUnit[unit] {
			c := systemColor("", i)
			fill(img, x, top-26, x+14, top-12, c)
			drawText(img, x+20, top-26, series[i].Name, colText)
			x += 20 + len(series[i].Name)*glyphAdv + 30
		}
		for t := 0; t <= yTicks; t++ {
			y := bottom - t*panelH/yTicks
			fill(img, linesLeft, y, linesRight, y+1, colGrid)
			label := fmt.Sprintf("%g", yMax*float64(t)/yTicks)
			drawText(img, linesLeft-10-len(label)*glyphAdv, y-7, label, colText)
		}
		fill(img, linesLeft, top, linesLeft+1, bottom, colText)
		for t := 0; t <= 5; t++ {
			xv := xMax * float64(t) / 5
			gx := xOfPoint(xv)
			fill(img, gx, bottom, gx+1, bottom+5, colText)
			label := fmt.Sprintf("%.3g", xv)
			drawText(img, gx-len(label)*glyphAdv/2, bottom+9, label, colText)
		}
		drawText(img, linesRight-len(xLabel)*glyphAdv, bottom+30, xLabel, colText)
		yOf := func(v float64) int { return bottom - int(math.Round(v/yMax*float64(panelH))) }
		for _, i := range byUnit[unit] {
			c := systemColor("", i)
			pts := series[i].Points
			for j := range pts {
				x0, y0 := xOfPoint(pts[j].X), yOf(pts[j].Y)
				x1, y1 := x0, y0
				if j+1 < len(pts) {
					x1, y1 = xOfPoint(pts[j+1].X), yOf(pts[j+1].Y)
				}
				drawLine(img, x0, y0, x1, y1, c)
			}
		}
	}
	return png.Encode(w, img)
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1 for 0).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// drawLine draws a 2-pixel line from (x0, y0) to (x1, y1).
func drawLine(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	n := max(abs(x1-x0), abs(y1-y0), 1)
	for k := 0; k <= n; k++ {
		x := x0 + (x1-x0)*k/n
		y := y0 + (y1-y0)*k/n
		fill(img, x, y, x+2, y+2, c)
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

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

// Chart geometry, in pixels. The x axis is log10(ratio to the ceiling)
// from 10^minDecade to 10^maxDecade.
const (
	chartWidth  = 1400
	labelWidth  = 330
	plotRight   = chartWidth - 40
	headerH     = 70
	footerH     = 50
	barH        = 10
	groupGap    = 14
	textScale   = 2
	glyphAdv    = 6 * textScale
	minDecade   = -3
	maxDecade   = 1
	decadeWidth = (plotRight - labelWidth) / (maxDecade - minDecade)
)

// systemColor gives Basin a fixed blue and the others distinct colours.
func systemColor(name string, i int) color.RGBA {
	if name == Basin {
		return color.RGBA{31, 99, 204, 255}
	}
	palette := []color.RGBA{
		{230, 126, 34, 255}, {39, 174, 96, 255}, {192, 57, 43, 255},
		{142, 68, 173, 255}, {121, 85, 72, 255}, {22, 160, 133, 255},
	}
	return palette[i%len(palette)]
}

// WriteChart draws one group of horizontal bars per row — one bar per
// system, its length the ratio to the local ceiling on a log scale — and
// encodes it as PNG.
func WriteChart(w io.Writer, r *Report) error {
	var (
		colBackground = color.RGBA{255, 255, 255, 255}
		colText       = color.RGBA{30, 30, 30, 255}
		colGrid       = color.RGBA{220, 220, 220, 255}
		colCeiling    = color.RGBA{60, 60, 60, 255}
		colMissing    = color.RGBA{150, 150, 150, 255}
	)
	var systems []System
	for _, s := range r.Systems {
		if s.Name != Ceiling {
			systems = append(systems, s)
		}
	}
	groupH := max(len(systems), 1)*barH + groupGap
	height := headerH + len(r.Rows)*groupH + footerH
	img := image.NewRGBA(image.Rect(0, 0, chartWidth, height))
	draw.Draw(img, img.Bounds(), &image.Uniform{colBackground}, image.Point{}, draw.Src)

	drawText(img, 10, 10, fmt.Sprintf("Ratio to the local ceiling (log scale) - %s %s",
		r.Started.Format("2006-01-02"), r.Mode), colText)
	x := 10
	for i, s := range systems {
		c := systemColor(s.Name, i)
		fill(img, x, 40, x+14, 54, c)
		drawText(img, x+20, 40, s.Name, colText)
		x += 20 + len(s.Name)*glyphAdv + 30
	}

	top, bottom := headerH, headerH+len(r.Rows)*groupH
	for d := minDecade; d <= maxDecade; d++ {
		gx := xOf(math.Pow(10, float64(d)))
		c := colGrid
		if d == 0 {
			c = colCeiling
		}
		fill(img, gx, top, gx+1, bottom, c)
		label := fmt.Sprintf("%g", math.Pow(10, float64(d)))
		drawText(img, gx-len(label)*glyphAdv/2, bottom+8, label, colText)
	}
	drawText(img, labelWidth, bottom+30, "1 = local directory (ceiling)", colText)

	for ri, row := range r.Rows {
		y0 := top + ri*groupH + groupGap/2
		drawText(img, 10, y0+(groupH-groupGap)/2-7, row.Name(), colText)
		for si, s := range systems {
			y := y0 + si*barH
			ratio, ok := row.Ratio(s.Name)
			if !ok {
				fill(img, labelWidth, y+4, labelWidth+6, y+barH-4, colMissing)
				continue
			}
			fill(img, labelWidth, y+1, xOf(ratio), y+barH-1, systemColor(s.Name, si))
		}
	}
	return png.Encode(w, img)
}

// xOf maps a ratio to its x coordinate, clamped to the axis.
func xOf(ratio float64) int {
	l := math.Log10(math.Max(ratio, 1e-9))
	l = math.Min(math.Max(l, minDecade), maxDecade)
	return labelWidth + int(math.Round((l-minDecade)*decadeWidth))
}

func fill(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	draw.Draw(img, image.Rect(x0, y0, max(x1, x0+1), y1), &image.Uniform{c}, image.Point{}, draw.Src)
}

// drawText draws s with the 5×7 font at textScale, top-left at (x, y).
func drawText(img *image.RGBA, x, y int, s string, c color.RGBA) {
	for _, r := range s {
		bits := glyph(r)
		for i := range 35 {
			if bits[i] == '#' {
				px, py := x+(i%5)*textScale, y+(i/5)*textScale
				fill(img, px, py, px+textScale, py+textScale, c)
			}
		}
		x += glyphAdv
	}
}

// Package plot draws small line charts as PNG with the standard library
// only: one or more stacked panels sharing the x axis, each with its own y
// scale, tick marks and labels in a built-in 5×7 bitmap font.
package plot

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"strconv"
	"strings"
)

// Series is one line. Series with the same Panel share a panel (and its y
// scale), drawn in the order the panels first appear; an empty Panel means
// a panel of the series' own, labelled with its Name. Points whose Y is NaN
// are gaps in the line.
type Series struct {
	Name  string
	Panel string
	X, Y  []float64
	Color color.Color // nil: the next color of a default palette
}

// Image geometry, in pixels.
const (
	width       = 900
	panelHeight = 210
	marginLeft  = 64
	marginRight = 20
	marginTop   = 34 // title
	panelGap    = 46 // x tick labels and the next panel's label
	marginBot   = 30
)

var (
	background = color.RGBA{255, 255, 255, 255}
	axisColor  = color.RGBA{40, 40, 40, 255}
	gridColor  = color.RGBA{225, 225, 225, 255}
	textColor  = color.RGBA{20, 20, 20, 255}
	palette    = []color.RGBA{
		{31, 119, 180, 255}, // blue
		{214, 39, 40, 255},  // red
		{255, 127, 14, 255}, // orange
		{44, 160, 44, 255},  // green
		{148, 103, 189, 255},
		{140, 86, 75, 255},
	}
)

// Lines writes a PNG of series to w: one panel per distinct Panel, stacked,
// sharing the x range, each with a legend of its series.
func Lines(w io.Writer, title string, series []Series) error {
	l, err := newLayout(series)
	if err != nil {
		return err
	}
	img := image.NewRGBA(image.Rect(0, 0, l.width, l.height))
	draw.Draw(img, img.Bounds(), &image.Uniform{background}, image.Point{}, draw.Src)
	scale := 2 // the title, smaller if it would not fit
	if textWidth(title, 2) > l.width-marginLeft-marginRight {
		scale = 1
	}
	text(img, marginLeft, 10, title, textColor, scale)
	for _, p := range l.panels {
		p.drawAxes(img, l)
		lx := p.rect.Max.X - 4
		for i := len(p.series) - 1; i >= 0; i-- { // legend, right-aligned
			s := p.series[i]
			name := strings.ToUpper(s.Name)
			lx -= textWidth(name, 1)
			text(img, lx, p.rect.Min.Y-12, name, textColor, 1)
			lx -= 12
			fill(img, image.Rect(lx, p.rect.Min.Y-12, lx+8, p.rect.Min.Y-4), s.color)
			lx -= 10
		}
		text(img, p.rect.Min.X, p.rect.Min.Y-12, strings.ToUpper(p.label), textColor, 1)
		for _, s := range p.series {
			p.drawSeries(img, l, s)
		}
	}
	return png.Encode(w, img)
}

// layout is the geometry of an image: the shared x range and the panels.
type layout struct {
	width, height int
	xmin, xmax    float64
	xticks        []float64
	panels        []*panel
}

type panel struct {
	label      string
	rect       image.Rectangle // the plotting area
	ymin, ymax float64
	yticks     []float64
	series     []series
}

type series struct {
	Series
	color color.RGBA
}

func newLayout(in []Series) (*layout, error) {
	if len(in) == 0 {
		return nil, errors.New("plot: no series")
	}
	l := &layout{width: width, xmin: math.Inf(1), xmax: math.Inf(-1)}
	byLabel := map[string]*panel{}
	for i, s := range in {
		if len(s.X) != len(s.Y) {
			return nil, fmt.Errorf("plot: series %q has %d x and %d y values", s.Name, len(s.X), len(s.Y))
		}
		label := s.Panel
		if label == "" {
			label = s.Name
		}
		p := byLabel[label]
		if p == nil {
			p = &panel{label: label, ymin: math.Inf(1), ymax: math.Inf(-1)}
			byLabel[label] = p
			l.panels = append(l.panels, p)
		}
		c := palette[i%len(palette)]
		if s.Color != nil {
			r, g, b, a := s.Color.RGBA()
			c = color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)}
		}
		p.series = append(p.series, series{Series: s, color: c})
		for j, x := range s.X {
			y := s.Y[j]
			if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
				continue
			}
			l.xmin, l.xmax = math.Min(l.xmin, x), math.Max(l.xmax, x)
			p.ymin, p.ymax = math.Min(p.ymin, y), math.Max(p.ymax, y)
		}
	}
	if math.IsInf(l.xmin, 1) { // no finite point at all
		l.xmin, l.xmax = 0, 1
	}
	if l.xmax == l.xmin {
		l.xmax = l.xmin + 1
	}
	l.xticks = ticks(l.xmin, l.xmax, 10)
	l.height = marginTop + len(l.panels)*panelHeight + (len(l.panels)-1)*panelGap + marginBot
	y := marginTop
	for _, p := range l.panels {
		if math.IsInf(p.ymin, 1) {
			p.ymin, p.ymax = 0, 1
		}
		if p.ymin > 0 {
			p.ymin = 0 // rates and latencies read best from zero
		}
		p.yticks = ticks(p.ymin, p.ymax, 5)
		p.ymax = math.Max(p.ymax, p.yticks[len(p.yticks)-1])
		p.ymin = math.Min(p.ymin, p.yticks[0])
		if p.ymax == p.ymin {
			p.ymax = p.ymin + 1
		}
		p.rect = image.Rect(marginLeft, y+12, width-marginRight, y+panelHeight)
		y += panelHeight + panelGap
	}
	return l, nil
}

// point maps a data point of panel p to its pixel.
func (p *panel) point(l *layout, x, y float64) (int, int) {
	fx := (x - l.xmin) / (l.xmax - l.xmin)
	fy := (y - p.ymin) / (p.ymax - p.ymin)
	px := p.rect.Min.X + int(math.Round(fx*float64(p.rect.Dx()-1)))
	py := p.rect.Max.Y - 1 - int(math.Round(fy*float64(p.rect.Dy()-1)))
	return px, py
}

func (p *panel) drawAxes(img *image.RGBA, l *layout) {
	r := p.rect
	for _, t := range p.yticks {
		_, py := p.point(l, l.xmin, t)
		hline(img, r.Min.X, r.Max.X-1, py, gridColor)
		hline(img, r.Min.X-4, r.Min.X-1, py, axisColor)
		s := format(t)
		text(img, r.Min.X-7-textWidth(s, 1), py-3, s, textColor, 1)
	}
	for _, t := range l.xticks {
		px, _ := p.point(l, t, p.ymin)
		vline(img, px, r.Min.Y, r.Max.Y-1, gridColor)
		vline(img, px, r.Max.Y, r.Max.Y+3, axisColor)
		s := format(t)
		text(img, px-textWidth(s, 1)/2, r.Max.Y+6, s, textColor, 1)
	}
	hline(img, r.Min.X, r.Max.X-1, r.Max.Y-1, axisColor)
	vline(img, r.Min.X, r.Min.Y, r.Max.Y-1, axisColor)
}

// drawSeries draws s as 2-pixel-wide segments between consecutive finite
// points.
func (p *panel) drawSeries(img *image.RGBA, l *layout, s series) {
	havePrev := false
	var px, py int
	for i, x := range s.X {
		y := s.Y[i]
		if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
			havePrev = false
			continue
		}
		cx, cy := p.point(l, x, y)
		if havePrev {
			segment(img, px, py, cx, cy, s.color)
		} else {
			fill(img, image.Rect(cx-1, cy-1, cx+1, cy+1), s.color)
		}
		px, py, havePrev = cx, cy, true
	}
}

// segment draws a line (Bresenham) two pixels thick.
func segment(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := 1, 1
	if x0 > x1 {
		sx = -1
	}
	if y0 > y1 {
		sy = -1
	}
	e := dx + dy
	for {
		img.SetRGBA(x0, y0, c)
		img.SetRGBA(x0, y0+1, c)
		img.SetRGBA(x0+1, y0, c)
		if x0 == x1 && y0 == y1 {
			return
		}
		if e2 := 2 * e; e2 >= dy {
			e += dy
			x0 += sx
		} else {
			e += dx
			y0 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func hline(img *image.RGBA, x0, x1, y int, c color.RGBA) {
	for x := x0; x <= x1; x++ {
		img.SetRGBA(x, y, c)
	}
}

func vline(img *image.RGBA, x, y0, y1 int, c color.RGBA) {
	for y := y0; y <= y1; y++ {
		img.SetRGBA(x, y, c)
	}
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	draw.Draw(img, r, &image.Uniform{c}, image.Point{}, draw.Src)
}

// ticks returns about n round values (1, 2 or 5 × 10^k apart) covering
// [lo, hi].
func ticks(lo, hi float64, n int) []float64 {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	start := math.Floor(lo/step) * step
	var out []float64
	for v := start; ; v += step {
		out = append(out, v)
		if v >= hi-step*1e-9 || len(out) > 4*n {
			break
		}
	}
	return out
}

// format writes a tick value compactly: 12k, 1.5M, 0.25.
func format(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "K"
	}
	return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64)
}

// glyphs is a 5×7 bitmap font of the characters the labels use; lower
// case is drawn as upper case, anything else as a blank.
var glyphs = map[rune][7]string{
	'0': {".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."},
	'1': {"..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."},
	'2': {".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"},
	'3': {"#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###."},
	'4': {"...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."},
	'5': {"#####", "#....", "####.", "....#", "....#", "#...#", ".###."},
	'6': {"..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."},
	'7': {"#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."},
	'8': {".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."},
	'9': {".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."},
	'A': {".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"},
	'B': {"####.", "#...#", "#...#", "####.", "#...#", "#...#", "####."},
	'C': {".###.", "#...#", "#....", "#....", "#....", "#...#", ".###."},
	'D': {"###..", "#..#.", "#...#", "#...#", "#...#", "#..#.", "###.."},
	'E': {"#####", "#....", "#....", "####.", "#....", "#....", "#####"},
	'F': {"#####", "#....", "#....", "####.", "#....", "#....", "#...."},
	'G': {".###.", "#...#", "#....", "#.###", "#...#", "#...#", ".####"},
	'H': {"#...#", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"},
	'I': {".###.", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."},
	'J': {"..###", "...#.", "...#.", "...#.", "...#.", "#..#.", ".##.."},
	'K': {"#...#", "#..#.", "#.#..", "##...", "#.#..", "#..#.", "#...#"},
	'L': {"#....", "#....", "#....", "#....", "#....", "#....", "#####"},
	'M': {"#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#"},
	'N': {"#...#", "#...#", "##..#", "#.#.#", "#..##", "#...#", "#...#"},
	'O': {".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."},
	'P': {"####.", "#...#", "#...#", "####.", "#....", "#....", "#...."},
	'Q': {".###.", "#...#", "#...#", "#...#", "#.#.#", "#..#.", ".##.#"},
	'R': {"####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"},
	'S': {".####", "#....", "#....", ".###.", "....#", "....#", "####."},
	'T': {"#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."},
	'U': {"#...#", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."},
	'V': {"#...#", "#...#", "#...#", "#...#", "#...#", ".#.#.", "..#.."},
	'W': {"#...#", "#...#", "#...#", "#.#.#", "#.#.#", "#.#.#", ".#.#."},
	'X': {"#...#", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "#...#"},
	'Y': {"#...#", "#...#", ".#.#.", "..#..", "..#..", "..#..", "..#.."},
	'Z': {"#####", "....#", "...#.", "..#..", ".#...", "#....", "#####"},
	'.': {".....", ".....", ".....", ".....", ".....", ".##..", ".##.."},
	',': {".....", ".....", ".....", ".....", ".##..", "..#..", ".#..."},
	':': {".....", ".##..", ".##..", ".....", ".##..", ".##..", "....."},
	'-': {".....", ".....", ".....", "#####", ".....", ".....", "....."},
	'+': {".....", "..#..", "..#..", "#####", "..#..", "..#..", "....."},
	'=': {".....", ".....", "#####", ".....", "#####", ".....", "....."},
	'/': {".....", "....#", "...#.", "..#..", ".#...", "#....", "....."},
	'%': {"##...", "##..#", "...#.", "..#..", ".#...", "#..##", "...##"},
	'(': {"...#.", "..#..", ".#...", ".#...", ".#...", "..#..", "...#."},
	')': {".#...", "..#..", "...#.", "...#.", "...#.", "..#..", ".#..."},
	'_': {".....", ".....", ".....", ".....", ".....", ".....", "#####"},
	'×': {".....", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "....."},
}

// textWidth is the width in pixels of s drawn at scale.
func textWidth(s string, scale int) int {
	n := len([]rune(s))
	if n == 0 {
		return 0
	}
	return (n*6 - 1) * scale
}

// text draws s with its top-left corner at (x, y), each font pixel a
// scale×scale square.
func text(img *image.RGBA, x, y int, s string, c color.RGBA, scale int) {
	for _, r := range strings.ToUpper(s) {
		if g, ok := glyphs[r]; ok {
			for row, bits := range g {
				for col, b := range bits {
					if b == '#' {
						fill(img, image.Rect(x+col*scale, y+row*scale, x+(col+1)*scale, y+(row+1)*scale), c)
					}
				}
			}
		}
		x += 6 * scale
	}
}

package plot

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"testing"
)

func TestLinesDrawsEveryPoint(t *testing.T) {
	var xs, rate, half, p99 []float64
	for i := 0; i <= 60; i++ {
		xs = append(xs, float64(i))
		rate = append(rate, 20000+5000*math.Sin(float64(i)/6))
		half = append(half, rate[i]/2)
		p99 = append(p99, 40+float64(i%10)*12)
	}
	p99[30] = math.NaN() // a gap
	in := []Series{
		{Name: "accepted/s", Panel: "artifacts/s", X: xs, Y: rate},
		{Name: "processed/s", Panel: "artifacts/s", X: xs, Y: half},
		{Name: "ack p99 ms", X: xs, Y: p99, Color: color.RGBA{0, 128, 0, 255}},
	}
	var buf bytes.Buffer
	if err := Lines(&buf, "Vigil bench", in); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	l, err := newLayout(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.panels) != 2 {
		t.Fatalf("panels = %d, want 2", len(l.panels))
	}
	want := image.Rect(0, 0, width, marginTop+2*panelHeight+panelGap+marginBot)
	if img.Bounds() != want {
		t.Fatalf("size = %v, want %v", img.Bounds(), want)
	}
	// Every finite point of every series has a pixel of the series' color
	// at (or next to) its position.
	for pi, p := range l.panels {
		for _, s := range p.series {
			for i, x := range s.X {
				y := s.Y[i]
				if math.IsNaN(y) {
					continue
				}
				px, py := p.point(l, x, y)
				if !image.Pt(px, py).In(p.rect.Inset(-2)) {
					t.Fatalf("panel %d %s point %d at (%d,%d) outside %v", pi, s.Name, i, px, py, p.rect)
				}
				if !near(img, px, py, s.color) {
					t.Errorf("panel %d %s point %d: no pixel of %v near (%d,%d)", pi, s.Name, i, s.color, px, py)
				}
			}
		}
	}
	// Something other than the background exists in the title and the
	// tick labels (the font is drawn).
	if !anyNonBackground(img, image.Rect(marginLeft, 8, marginLeft+100, 26)) {
		t.Error("no title pixels")
	}
	if !anyNonBackground(img, image.Rect(0, marginTop, marginLeft-6, marginTop+panelHeight)) {
		t.Error("no y tick labels")
	}
}

func TestLinesErrors(t *testing.T) {
	var buf bytes.Buffer
	if err := Lines(&buf, "x", nil); err == nil {
		t.Error("no series: want error")
	}
	if err := Lines(&buf, "x", []Series{{Name: "a", X: []float64{1, 2}, Y: []float64{1}}}); err == nil {
		t.Error("mismatched lengths: want error")
	}
	// Flat, single-point and all-NaN series still draw.
	for _, s := range []Series{
		{Name: "flat", X: []float64{0, 1, 2}, Y: []float64{5, 5, 5}},
		{Name: "one", X: []float64{3}, Y: []float64{0}},
		{Name: "nan", X: []float64{0}, Y: []float64{math.NaN()}},
	} {
		buf.Reset()
		if err := Lines(&buf, s.Name, []Series{s}); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
		if _, err := png.Decode(&buf); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
}

func TestTicks(t *testing.T) {
	for _, c := range []struct{ lo, hi float64 }{{0, 1}, {0, 23456}, {0, 60}, {3, 3.5}, {0, 0.004}} {
		ts := ticks(c.lo, c.hi, 5)
		if ts[0] > c.lo || ts[len(ts)-1] < c.hi-1e-12 || len(ts) < 2 || len(ts) > 12 {
			t.Errorf("ticks(%v, %v) = %v", c.lo, c.hi, ts)
		}
	}
	for v, want := range map[float64]string{0: "0", 20000: "20K", 1500000: "1.5M", 0.25: "0.25", 250: "250"} {
		if got := format(v); got != want {
			t.Errorf("format(%v) = %q, want %q", v, got, want)
		}
	}
}

func near(img image.Image, x, y int, c color.RGBA) bool {
	for dy := -1; dy <= 1; dy++ {
		for dx := -1; dx <= 1; dx++ {
			r, g, b, _ := img.At(x+dx, y+dy).RGBA()
			if uint8(r>>8) == c.R && uint8(g>>8) == c.G && uint8(b>>8) == c.B {
				return true
			}
		}
	}
	return false
}

func anyNonBackground(img image.Image, r image.Rectangle) bool {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if uint8(cr>>8) != background.R || uint8(cg>>8) != background.G || uint8(cb>>8) != background.B {
				return true
			}
		}
	}
	return false
}

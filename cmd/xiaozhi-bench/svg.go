package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// series is one latency distribution to draw.
type series struct {
	Name   string
	Sorted []time.Duration
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf"}

// writeSVG draws the latency distributions as a histogram on a log-scale
// latency axis (10 µs … 10 s, 20 bins per decade): one line per series, the
// share of its calls in each bin, with p50 and p99 marked.
func writeSVG(w io.Writer, title string, ss []series) error {
	const (
		width, height         = 1120, 560
		left, right, top, bot = 70, 360, 50, 60
		plotW, plotH          = width - left - right, height - top - bot
		lo, hi                = 10 * time.Microsecond, 10 * time.Second
		perDecade             = 20
	)
	decades := math.Log10(float64(hi) / float64(lo))
	xOf := func(d time.Duration) float64 {
		v := math.Log10(float64(max(d, lo))/float64(lo)) / decades
		return left + math.Min(v, 1)*plotW
	}
	type drawn struct {
		name  string
		share []float64
		edges []time.Duration
		p50   time.Duration
		p99   time.Duration
		n     int
	}
	var ds []drawn
	top1 := 0.0
	for _, s := range ss {
		edges, share := logHistogram(s.Sorted, lo, hi, perDecade)
		for _, v := range share {
			top1 = math.Max(top1, v)
		}
		ds = append(ds, drawn{s.Name, share, edges, percentile(s.Sorted, .5), percentile(s.Sorted, .99), len(s.Sorted)})
	}
	yMax := niceCeil(top1)
	yOf := func(v float64) float64 { return top + plotH - v/yMax*plotH }

	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="28" font-size="16" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	// Grid and axes.
	for d := lo; d <= hi; d *= 10 {
		x := xOf(d)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", x, top, x, top+plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, top+plotH+18, durLabel(d))
	}
	for i := 0; i <= 4; i++ {
		v := yMax * float64(i) / 4
		y := yOf(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`+"\n", left, y, left+plotW, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%.1f%%</text>`+"\n", left-6, y+4, v*100)
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", left, top, plotW, plotH)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">latency (log scale)</text>`+"\n", left+plotW/2, height-15)
	fmt.Fprintf(&b, `<text x="18" y="%d" text-anchor="middle" transform="rotate(-90 18 %d)">share of calls per bin (%d bins per decade)</text>`+"\n", top+plotH/2, top+plotH/2, perDecade)
	// Series.
	for i, d := range ds {
		color := palette[i%len(palette)]
		var pts []string
		for j, v := range d.share {
			x0, x1 := xOf(d.edges[j]), xOf(d.edges[j+1])
			y := yOf(v)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x0, y, x1, y))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", color, strings.Join(pts, " "))
		if d.n > 0 {
			for _, p := range []struct {
				v    time.Duration
				dash string
			}{{d.p50, "4,3"}, {d.p99, "1,3"}} {
				x := xOf(p.v)
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-dasharray="%s"/>`+"\n", x, top, x, top+plotH, color, p.dash)
			}
		}
		ly := top + 10 + i*44
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", left+plotW+12, ly, left+plotW+32, ly, color)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", left+plotW+38, ly+4, html.EscapeString(d.name))
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">n=%d p50 %s p99 %s</text>`+"\n", left+plotW+38, ly+20, d.n, durLabel(d.p50), durLabel(d.p99))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">dashed: p50, dotted: p99</text>`+"\n", left+plotW+12, top+plotH)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (at least 0.01).
func niceCeil(v float64) float64 {
	if v <= 0.01 {
		return 0.01
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// durLabel formats a duration with three significant digits: 10µs, 2.5ms, 1s.
func durLabel(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return sig3(float64(d)/1e3) + "µs"
	case d < time.Second:
		return sig3(float64(d)/1e6) + "ms"
	default:
		return sig3(float64(d)/1e9) + "s"
	}
}

func sig3(v float64) string {
	prec := 2
	switch {
	case v >= 100:
		prec = 0
	case v >= 10:
		prec = 1
	}
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
	}
	return s
}

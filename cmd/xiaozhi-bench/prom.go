package main

import (
	"bufio"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// promSample is one line of the Prometheus text format.
type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

// promSamples is a scrape of /metrics.
type promSamples []promSample

// parseProm reads the Prometheus text exposition format (comments and
// timestamps ignored). It is enough for the hub's own /metrics.
func parseProm(r io.Reader) (promSamples, error) {
	var out promSamples
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s := promSample{labels: map[string]string{}}
		rest := ""
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				continue
			}
			s.name = line[:i]
			parseLabels(line[i+1:j], s.labels)
			rest = line[j+1:]
		} else {
			name, r, _ := strings.Cut(line, " ")
			s.name, rest = name, r
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		s.value = v
		out = append(out, s)
	}
	return out, sc.Err()
}

// parseLabels reads name="value",… (values may contain escaped quotes and commas).
func parseLabels(s string, into map[string]string) {
	for len(s) > 0 {
		eq := strings.IndexByte(s, '=')
		if eq < 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return
		}
		name := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s[:eq]), ","))
		var b strings.Builder
		i := eq + 2
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					b.WriteByte('\n')
				default:
					b.WriteByte(s[i])
				}
				continue
			}
			b.WriteByte(s[i])
		}
		into[name] = b.String()
		if i+1 >= len(s) {
			return
		}
		s = s[i+1:]
	}
}

// get returns the value of the first sample called name whose labels
// include every pair in kv (name, value, name, value…); NaN when none.
func (ps promSamples) get(name string, kv ...string) float64 {
	for _, s := range ps {
		if s.name == name && s.has(kv) {
			return s.value
		}
	}
	return math.NaN()
}

func (s promSample) has(kv []string) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		if s.labels[kv[i]] != kv[i+1] {
			return false
		}
	}
	return true
}

// bucket is one cumulative histogram bucket.
type bucket struct {
	le    float64 // upper bound; +Inf for the last
	count float64 // cumulative
}

// histogram returns the cumulative buckets of histogram name (samples
// name_bucket) with the labels kv, sorted by bound.
func (ps promSamples) histogram(name string, kv ...string) []bucket {
	var out []bucket
	for _, s := range ps {
		if s.name != name+"_bucket" || !s.has(kv) {
			continue
		}
		le, err := strconv.ParseFloat(s.labels["le"], 64)
		if err != nil {
			continue
		}
		out = append(out, bucket{le, s.value})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].le < out[j].le })
	return out
}

// subtract returns the buckets of a minus b (same bounds): the
// observations made between two scrapes.
func subtract(a, b []bucket) []bucket {
	out := make([]bucket, len(a))
	for i := range a {
		out[i] = a[i]
		if i < len(b) && b[i].le == a[i].le {
			out[i].count -= b[i].count
		}
	}
	return out
}

// bucketQuantile estimates quantile q of cumulative buckets, linearly
// within the bucket it falls in (as Prometheus's histogram_quantile does).
// It returns NaN for an empty histogram.
func bucketQuantile(bs []bucket, q float64) float64 {
	if len(bs) == 0 {
		return math.NaN()
	}
	total := bs[len(bs)-1].count
	if total <= 0 {
		return math.NaN()
	}
	rank := q * total
	prevLe, prevCount := 0.0, 0.0
	for _, b := range bs {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				return prevLe // beyond the last finite bound
			}
			if b.count == prevCount {
				return b.le
			}
			return prevLe + (b.le-prevLe)*(rank-prevCount)/(b.count-prevCount)
		}
		prevLe, prevCount = b.le, b.count
	}
	return prevLe
}

package main

import (
	"math"
	"slices"
	"sync"
	"time"
)

// samples collects latencies from many goroutines.
type samples struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *samples) add(d time.Duration) {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
}

// addAll appends a worker's local samples in one go.
func (s *samples) addAll(ds []time.Duration) {
	s.mu.Lock()
	s.d = append(s.d, ds...)
	s.mu.Unlock()
}

func (s *samples) sorted() []time.Duration {
	s.mu.Lock()
	out := slices.Clone(s.d)
	s.mu.Unlock()
	slices.Sort(out)
	return out
}

// percentile returns the q-quantile (0..1) of sorted by the nearest-rank
// method: the smallest sample with at least q of all samples at or below it.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// Latency summarises a set of latencies, in milliseconds.
type Latency struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50Ms"`
	P90   float64 `json:"p90Ms"`
	P99   float64 `json:"p99Ms"`
	P999  float64 `json:"p999Ms"`
	Max   float64 `json:"maxMs"`
	Mean  float64 `json:"meanMs"`
}

func summarize(sorted []time.Duration) Latency {
	l := Latency{Count: len(sorted)}
	if len(sorted) == 0 {
		return l
	}
	var sum time.Duration
	for _, d := range sorted {
		sum += d
	}
	l.P50, l.P90 = ms(percentile(sorted, .5)), ms(percentile(sorted, .9))
	l.P99, l.P999 = ms(percentile(sorted, .99)), ms(percentile(sorted, .999))
	l.Max = ms(sorted[len(sorted)-1])
	l.Mean = ms(sum / time.Duration(len(sorted)))
	return l
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// logHistogram counts sorted latencies into bins equally spaced on a log
// scale, perDecade bins per decade from lo to hi (values outside are put in
// the first or last bin). It returns the bins' lower edges and the share of
// samples (0..1) in each.
func logHistogram(sorted []time.Duration, lo, hi time.Duration, perDecade int) (edges []time.Duration, share []float64) {
	decades := math.Log10(float64(hi) / float64(lo))
	n := int(math.Ceil(decades * float64(perDecade)))
	edges = make([]time.Duration, n+1)
	for i := range edges {
		edges[i] = time.Duration(float64(lo) * math.Pow(10, float64(i)/float64(perDecade)))
	}
	share = make([]float64, n)
	if len(sorted) == 0 {
		return edges, share
	}
	for _, d := range sorted {
		i := 0
		if d > lo {
			i = int(math.Log10(float64(d)/float64(lo)) * float64(perDecade))
		}
		share[min(max(i, 0), n-1)]++
	}
	for i := range share {
		share[i] /= float64(len(sorted))
	}
	return edges, share
}

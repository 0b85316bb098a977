package metrics

import "github.com/prometheus/client_golang/prometheus"

// CountersFunc registers a family of counters with one label, read from f
// at each scrape: each key of f's map is a value of the label (counts kept
// elsewhere, such as a package's Stats). f's keys must be a bounded set.
func (m *Metrics) CountersFunc(name, help, label string, f func() map[string]uint64) {
	if m != nil {
		m.Registry.MustRegister(&countersFunc{desc: prometheus.NewDesc(name, help, []string{label}, nil), f: f})
	}
}

type countersFunc struct {
	desc *prometheus.Desc
	f    func() map[string]uint64
}

func (c *countersFunc) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *countersFunc) Collect(ch chan<- prometheus.Metric) {
	for v, n := range c.f() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n), v)
	}
}

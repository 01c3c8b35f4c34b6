package sinktest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// HealthGauge is herald_sink_healthy{sink=name} as reg serves it; the test
// fails when reg has no such value.
func HealthGauge(t testing.TB, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "herald_sink_healthy" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "sink" && l.GetValue() == name {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no herald_sink_healthy{sink=%q} gathered", name)
	return 0
}

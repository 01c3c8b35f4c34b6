package bridge

import (
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Build says which herald binary runs: the herald_build_info metric's
// labels.
type Build struct {
	// Version is the main module's version ("devel" for a build from a
	// work tree without one), or what the release build set.
	Version string
	// Revision is the VCS revision the binary was built from; Time its
	// commit time (RFC 3339); Modified whether the work tree had
	// uncommitted changes.
	Revision string
	Time     string
	Modified bool
	// GoVersion is the Go toolchain that built it.
	GoVersion string
}

// ReadBuild reads the running binary's build from runtime/debug: the main
// module's version and the vcs.revision, vcs.time and vcs.modified
// settings the go command stamps.
func ReadBuild() Build {
	b := Build{Version: "devel", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		b.Version = v
	}
	if bi.GoVersion != "" {
		b.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

var (
	buildMu sync.Mutex
	build   *Build
)

// SetBuild sets what herald_build_info reports in the bridges built after
// it (the herald command sets its own version). Without it, ReadBuild's.
func SetBuild(b Build) {
	buildMu.Lock()
	defer buildMu.Unlock()
	build = &b
}

func currentBuild() Build {
	buildMu.Lock()
	defer buildMu.Unlock()
	if build != nil {
		return *build
	}
	return ReadBuild()
}

// buildInfoMetric is herald_build_info{version,revision,goversion} = 1; a
// revision built from a modified tree ends in "+dirty".
func buildInfoMetric() prometheus.Collector {
	b := currentBuild()
	rev := b.Revision
	if rev != "" && b.Modified {
		rev += "+dirty"
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "herald_build_info",
		Help:        "Always 1; its labels say which herald runs: version, VCS revision and Go version.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": rev, "goversion": b.GoVersion},
	})
	g.Set(1)
	return g
}

package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/zkherald/herald/publish/bridge"
)

// version and commit override what the binary's build info says, for
// release builds made without the VCS at hand:
//
//	go build -ldflags "-X main.version=v1.2.0 -X main.commit=$(git rev-parse HEAD)" ./cmd/herald
var (
	version string
	commit  string
)

func init() {
	register(newVersionCmd)
	bridge.SetBuild(buildInfo()) // the bridge's herald_build_info metric
}

// buildInfo is this binary's build: the module version and the
// vcs.revision, vcs.time and vcs.modified the go command stamped, unless
// -ldflags set version or commit.
func buildInfo() bridge.Build {
	b := bridge.ReadBuild()
	if version != "" {
		b.Version = version
	}
	if commit != "" && commit != b.Revision {
		b.Revision, b.Time, b.Modified = commit, "", false
	}
	return b
}

// versionLine is what herald --version and herald version print.
func versionLine() string {
	b := buildInfo()
	s := "herald " + b.Version
	var rev string
	if b.Revision != "" {
		r := b.Revision
		if len(r) > 12 {
			r = r[:12]
		}
		rev = "revision " + r
		if b.Time != "" {
			rev += ", " + b.Time
		}
		if b.Modified {
			rev += ", modified"
		}
		rev += "; "
	}
	return fmt.Sprintf("%s (%s%s %s/%s)", s, rev, b.GoVersion, runtime.GOOS, runtime.GOARCH)
}

func newVersionCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print herald's version, VCS revision and Go version",
		Long: `version prints the module version herald was built as, the VCS revision,
its commit time and whether the work tree had uncommitted changes, and the Go
version (the same as herald --version). A running bridge exports the same as
the herald_build_info metric.`,
		Example: `  herald version
  herald version --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !asJSON {
				_, err := fmt.Fprintln(a.stdout, versionLine())
				return err
			}
			b := buildInfo()
			return writeJSON(a.stdout, struct {
				Version   string `json:"version"`
				Revision  string `json:"revision,omitempty"`
				Time      string `json:"time,omitempty"`
				Modified  bool   `json:"modified"`
				GoVersion string `json:"go_version"`
				Platform  string `json:"platform"`
			}{b.Version, b.Revision, b.Time, b.Modified, b.GoVersion, runtime.GOOS + "/" + runtime.GOARCH})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

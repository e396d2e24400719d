package main

import (
	"encoding/json"
	"fmt"
	"github.com/implloop/implloop/loop"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/implloop/implloop/internal/words"
)

// version is implloop's version when the build does not carry one: a build
// from a checkout (go build, go test) has the module version "(devel)";
// `go install github.com/implloop/implloop/cmd/implloop@v1.2.3` stamps v1.2.3.
const version = "0.1.0-dev"

// versionInfo is what `implloop version` reports: enough to tell which
// implloop wrote a journal or a bug report.
type versionInfo struct {
	Version string `json:"version"`
	// Revision is the commit the binary was built from, and Dirty whether
	// the work tree had changes; both absent when the build recorded no
	// VCS information (-buildvcs=false, or built from a module download):
	// "dirty": false would claim a clean tree nobody looked at.
	Revision string `json:"revision,omitempty"`
	Dirty    *bool  `json:"dirty,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
	// JournalSchema is the journal schema version this implloop writes; an
	// older implloop refuses a journal with a newer one.
	JournalSchema int `json:"journal_schema"`
}

func buildVersion() versionInfo {
	bi, _ := debug.ReadBuildInfo()
	return versionOf(bi)
}

// versionOf reads the version out of the build information (nil: none).
func versionOf(bi *debug.BuildInfo) versionInfo {
	v := versionInfo{
		Version:       version,
		Go:            runtime.Version(),
		Platform:      runtime.GOOS + "/" + runtime.GOARCH,
		JournalSchema: loop.JournalSchema(),
	}
	if bi == nil {
		return v
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			dirty := s.Value == "true"
			v.Dirty = &dirty
		}
	}
	// A build in a checkout stamps a pseudo-version made of the commit's
	// time and id when no tag names it: the revision says that better.
	// Installed at a commit, the pseudo-version is all there is.
	mv := bi.Main.Version
	if mv != "" && mv != "(devel)" && (v.Revision == "" || !pseudoVersion.MatchString(mv)) {
		v.Version = mv
	}
	return v
}

// pseudoVersion matches the go command's pseudo-versions
// (v0.0.0-20261130101456-fe5b0a53d1c9, v1.2.4-0.2026..., with +dirty).
var pseudoVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+-(.*\.)?[0-9]{14}-[0-9a-f]{12}(\+dirty)?$`)

// line is the version as one line, without the final newline:
//
//	implloop version 0.1.0-dev (83bc007a1b2c, dirty; go1.26.8 linux/amd64; journal schema 3)
func (v versionInfo) line() string {
	var parts []string
	if v.Revision != "" {
		rev := words.Short(v.Revision)
		if v.Dirty != nil && *v.Dirty {
			rev += ", dirty"
		}
		parts = append(parts, rev)
	}
	parts = append(parts, v.Go+" "+v.Platform, fmt.Sprintf("journal schema %d", v.JournalSchema))
	return fmt.Sprintf("implloop version %s (%s)", v.Version, strings.Join(parts, "; "))
}

func newVersionCmd(io *ioStreams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print implloop's version, the commit it was built from, its Go and journal schema versions",
		Long: `Print one line: implloop's version, the commit it was built from (and
"dirty" when the work tree had changes), the Go version and platform it was
built for, and the journal schema version it writes. 'implloop --version'
prints the same line. --json gives the same facts as an object; a binary
built without VCS information (-buildvcs=false) has no revision and no
dirty key there, rather than a guess.

` + exitStatusHelp(exitDone, exitUsage),
		Example: `  implloop version
  implloop version --json | jq .journal_schema`,
		Args:              exactArgs(0, "no arguments"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := buildVersion()
			if asJSON {
				enc := json.NewEncoder(io.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			}
			_, err := fmt.Fprintln(io.Out, v.line())
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// Package buildinfo says which build of pastenode a binary is: its release
// version, else its module version, and the commit it was built from. Both
// binaries print it for --version, and a node reports it in its status and
// its metrics, so that an operator can tell which build each node runs.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// The Makefile stamps these with -ldflags "-X ...". A plain go build
// leaves them empty.
var (
	// release is the release version, as `git describe --tags` names it.
	release string
	// revision and modified stand in for the go command's VCS stamp where
	// a build has none: with -buildvcs=false, or in a git worktree, which
	// the go command does not take for a repository. modified is "true"
	// for a build with uncommitted changes.
	revision, modified string
)

// Info identifies a build.
type Info struct {
	// Version is the release version where there is one, else the main
	// module's version ("v1.2.3" when built with go install ...@v1.2.3),
	// else "devel".
	Version string `json:"version"`
	// Revision is the commit the binary was built from; "" when unknown.
	Revision string `json:"revision,omitempty"`
	// Modified is set when the tree had uncommitted changes.
	Modified  bool   `json:"modified"`
	GoVersion string `json:"go_version"`
}

// Read returns this binary's Info.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return from(bi, release, revision, modified)
}

// from is Read over the go command's build info bi (nil when the binary
// has none) and the stamped values.
func from(bi *debug.BuildInfo, release, revision, modified string) Info {
	in := Info{Version: release, GoVersion: runtime.Version()}
	if bi != nil {
		if in.Version == "" && bi.Main.Version != "(devel)" {
			in.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Revision = s.Value
			case "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
		if bi.GoVersion != "" {
			in.GoVersion = bi.GoVersion
		}
	}
	if in.Version == "" {
		in.Version = "devel"
	}
	if in.Revision == "" {
		in.Revision, in.Modified = revision, modified == "true"
	}
	return in
}

// shortRevision is how many characters of a commit hash String shows, as
// many as a Go pseudo-version does.
const shortRevision = 12

// String is the build in one line: the version, then the commit and
// "dirty" when the version does not say them already, as in
// "v1.2.0 (d1d5d9676b63)" or "devel (d1d5d9676b63, dirty)".
func (in Info) String() string {
	var more []string
	rev := in.Revision
	if len(rev) > shortRevision {
		rev = rev[:shortRevision]
	}
	if rev != "" && !strings.Contains(in.Version, rev) {
		more = append(more, rev)
	}
	if in.Modified && !strings.Contains(in.Version, "dirty") {
		more = append(more, "dirty")
	}
	if len(more) == 0 {
		return in.Version
	}
	return in.Version + " (" + strings.Join(more, ", ") + ")"
}

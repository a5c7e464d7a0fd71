package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFrom(t *testing.T) {
	vcs := func(version, rev, modified string) *debug.BuildInfo {
		bi := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: version}}
		if rev != "" {
			bi.Settings = []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
		}
		return bi
	}
	const rev = "d1d5d9676b63d9cca687f8aafd42af111ebffc41"
	tests := []struct {
		name                        string
		bi                          *debug.BuildInfo
		release, revision, modified string
		want                        string
		wantRev                     string
	}{
		{name: "release and vcs", bi: vcs("(devel)", rev, "false"), release: "v1.2.0",
			want: "v1.2.0 (d1d5d9676b63)", wantRev: rev},
		{name: "release after a tag, dirty", bi: vcs("(devel)", rev, "true"), release: "v1.2.0-3-gd1d5d96",
			want: "v1.2.0-3-gd1d5d96 (d1d5d9676b63, dirty)", wantRev: rev},
		{name: "no release: the module version", bi: vcs("v1.3.0", "", ""),
			want: "v1.3.0"},
		{name: "pseudo-version names the commit", bi: vcs("v0.0.0-20260101120000-d1d5d9676b63+dirty", rev, "true"),
			want: "v0.0.0-20260101120000-d1d5d9676b63+dirty", wantRev: rev},
		{name: "local build", bi: vcs("(devel)", rev, "true"),
			want: "devel (d1d5d9676b63, dirty)", wantRev: rev},
		{name: "no vcs stamp: the Makefile's", bi: vcs("(devel)", "", ""), revision: rev, modified: "true",
			want: "devel (d1d5d9676b63, dirty)", wantRev: rev},
		{name: "the go command's stamp wins", bi: vcs("(devel)", rev, "false"), revision: "0123456789abcdef", modified: "true",
			want: "devel (d1d5d9676b63)", wantRev: rev},
		{name: "nothing known", bi: nil, want: "devel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := from(tt.bi, tt.release, tt.revision, tt.modified)
			if got := in.String(); got != tt.want {
				t.Errorf("String: got %q, want %q", got, tt.want)
			}
			if in.Revision != tt.wantRev {
				t.Errorf("Revision: got %q, want %q", in.Revision, tt.wantRev)
			}
		})
	}
}

package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/vigil-soc/vigil/internal/sqlite"
)

// runVersion prints what this binary is: its module version, the commit
// it was built from, the Go version, and the versions of the drivers and
// servers built into it.
func runVersion(stdout io.Writer) error {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		fmt.Fprintf(stdout, "vigil (no build information)\ngo: %s\n", runtime.Version())
		return nil
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	commit := settings["vcs.revision"]
	if commit == "" {
		commit = "unknown (built without version control information)"
	} else if settings["vcs.modified"] == "true" {
		commit += " (with uncommitted changes)"
	}
	fmt.Fprintf(stdout, "vigil %s\n", version)
	fmt.Fprintf(stdout, "commit: %s\n", commit)
	if t := settings["vcs.time"]; t != "" {
		fmt.Fprintf(stdout, "commit time: %s\n", t)
	}
	fmt.Fprintf(stdout, "go: %s %s/%s\n", bi.GoVersion, runtime.GOOS, runtime.GOARCH)
	deps := map[string]string{}
	for _, d := range bi.Deps {
		deps[d.Path] = d.Version
	}
	for _, d := range []struct{ what, path string }{
		{"sqlite driver", sqlite.DriverModule},
		{"postgresql driver", "github.com/jackc/pgx/v5"},
		{"embedded nats-server", "github.com/nats-io/nats-server/v2"},
		{"nats client", "github.com/nats-io/nats.go"},
	} {
		if v, ok := deps[d.path]; ok {
			fmt.Fprintf(stdout, "%s: %s %s\n", d.what, d.path, v)
		}
	}
	return nil
}

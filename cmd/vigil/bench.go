package main

import (
	"context"
	"flag"
	"io"
	"strings"

	"github.com/vigil-soc/vigil/internal/bench"
)

// runBench is vigil bench: the load tool of internal/bench, with its flags
// read like every command's (each also from VIGIL_<FLAG>, so --token from
// VIGIL_TOKEN) and vigil serve as its embedded server.
func runBench(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var c bench.Config
	fs := c.FlagSet(stderr)
	if err := parseFlags(fs, joinBoolValues(fs, args), getenv); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return err
	}
	noEnv := func(string) string { return "" } // the embedded defaults, whatever the environment says
	return bench.Run(ctx, c, bench.Options{
		Command: "vigil bench " + strings.Join(bench.RedactArgs(args), " "),
		Serve: func(ctx context.Context, args []string, log io.Writer) error {
			return runServe(ctx, args, noEnv, log, true)
		},
		Stdout: stdout,
		Stderr: stderr,
	})
}

// joinBoolValues rewrites "--flag true" and "--flag false" of boolean
// flags as "--flag=true" / "--flag=false", which package flag needs, so
// that both spellings work.
func joinBoolValues(fs *flag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		name := strings.TrimLeft(a, "-")
		if fl := fs.Lookup(name); fl != nil && strings.HasPrefix(a, "-") && !strings.Contains(name, "=") && i+1 < len(args) {
			if bf, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
				if v := args[i+1]; v == "true" || v == "false" {
					out = append(out, a+"="+v)
					i++
					continue
				}
			}
		}
		out = append(out, a)
	}
	return out
}

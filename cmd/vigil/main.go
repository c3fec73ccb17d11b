// Command vigil runs the Vigil security analytics service.
//
//	vigil serve     API + pipeline workers
//	vigil worker    pipeline workers only
//	vigil token     mint a development JWT
//	vigil migrate   apply schema migrations and exit
//	vigil bench     load-test a server (or an embedded one) and report
//	vigil version   print the build: version, commit, Go, drivers
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "vigil:", err)
		os.Exit(1)
	}
}

const usage = `usage: vigil <command> [flags]

commands:
  serve     run the API and the pipeline workers
  worker    run the pipeline workers only
  token     mint a signed JWT for development and scripts
  migrate   apply schema migrations and exit
  import    send Windows event log files (.evtx) to a server, one artifact per record
  bench     load-test a running or embedded server: ingest rate, latency, search
  version   print the version, commit, Go version and drivers of this binary

Run "vigil <command> -h" for the flags of a command. Every flag can also be
set through the environment as VIGIL_<FLAG> (e.g. VIGIL_DATA_DIR).
`

// run dispatches a subcommand. It reads nothing global but what it is given.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return runServe(ctx, rest, getenv, stderr, true)
	case "worker":
		return runServe(ctx, rest, getenv, stderr, false)
	case "token":
		return runToken(ctx, rest, getenv, stdout, stderr)
	case "migrate":
		return runMigrate(ctx, rest, getenv, stdout, stderr)
	case "bench":
		return runBench(ctx, rest, getenv, stdout, stderr)
	case "import":
		return runImport(ctx, rest, getenv, stdout, stderr)
	case "version", "--version":
		return runVersion(stdout)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", cmd)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/vigil-soc/vigil/internal/client"
	"github.com/vigil-soc/vigil/internal/evtximport"
)

// runImport sends .evtx files to a server, one artifact per record.
func runImport(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("import", "Reads Windows event log files (.evtx) and sends every record to a server as an artifact "+
		"(the event as Winlogbeat sends it), through its Elasticsearch bulk endpoint. Importing a file again stores each record once.\n"+
		"Usage: vigil import --url URL --token TOKEN FILE.evtx...", stderr)
	url := fs.String("url", "http://127.0.0.1:8080", "the server's base URL")
	token := fs.String("token", "", "a token with signals:write, or an ingest API key of the org (required)")
	index := fs.String("index", "windows", "the bulk index the records are sent to; it names their source")
	batch := fs.Int("batch", 1000, "records per request (1 to 10000)")
	if err := parseFlagsAndArgs(fs, args, getenv); err != nil {
		return err
	}
	files := fs.Args()
	switch {
	case *token == "":
		return errors.New("--token is required (vigil token --permission signals:write, or an ingest API key)")
	case len(files) == 0:
		return errors.New("name one or more .evtx files")
	case *batch < 1 || *batch > 10000:
		return fmt.Errorf("--batch %d: must be 1 to 10000", *batch)
	}
	c := client.New(*url, *token, &http.Client{Timeout: 2 * time.Minute})
	var total evtximport.Result
	failed := 0
	for _, path := range files {
		res, err := evtximport.File(ctx, c, path, evtximport.Options{Index: *index, Batch: *batch, Log: stderr})
		total.Records += res.Records
		total.Damaged += res.Damaged
		total.Rejected += res.Rejected
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", path, err)
			failed++
			continue
		}
		fmt.Fprintf(stdout, "%s: %d records sent, %d refused, %d damaged\n", path, res.Records, res.Rejected, res.Damaged)
	}
	if failed > 0 || total.Damaged > 0 || total.Rejected > 0 {
		return fmt.Errorf("%d records sent; %d files failed, %d damaged chunks or records, %d refused",
			total.Records, failed, total.Damaged, total.Rejected)
	}
	return nil
}

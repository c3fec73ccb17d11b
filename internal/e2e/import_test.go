package e2e_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/client"
)

// evtxDir holds real recordings of attack techniques (EVTX-ATTACK-SAMPLES).
const evtxDir = "../../../shared/datasets/windows/evtx"

// TestImportEVTX runs `vigil import` on real .evtx files against a server:
// every record becomes one artifact of source windows, the event as
// Winlogbeat JSON with its own time; importing again stores nothing twice;
// a file with a damaged chunk is reported by name and offset, and its other
// chunks' records are stored.
func TestImportEVTX(t *testing.T) {
	data := t.TempDir()
	p := startVigil(t, "vigil", data)
	writer := mintToken(t, data, "acme", "signals:write")
	reader := newClient(p, mintToken(t, data, "acme", "signals:read"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	spray := filepath.Join(evtxDir, "Credential Access/kerberos_pwd_spray_4771.evtx")
	out, err := vigilImport(writer, p, spray)
	if err != nil {
		t.Fatalf("vigil import: %v\n%s", err, out)
	}
	if !strings.Contains(out, "12 records sent, 0 refused, 0 damaged") {
		t.Errorf("vigil import said %q; the file holds 12 records", out)
	}
	awaitTotal(t, ctx, reader, 12, "the spray's records")
	arts := allArtifacts(t, ctx, reader)
	ids := map[string]bool{}
	for _, a := range arts {
		var doc struct {
			Timestamp string `json:"@timestamp"`
			Winlog    struct {
				Channel  string `json:"channel"`
				EventID  string `json:"event_id"`
				RecordID uint64 `json:"record_id"`
				Computer string `json:"computer_name"`
			} `json:"winlog"`
		}
		if err := json.Unmarshal([]byte(a.Raw), &doc); err != nil {
			t.Fatalf("artifact %s: raw is no JSON document: %v", a.ID, err)
		}
		if a.Source != "windows" || doc.Winlog.Channel != "Security" || doc.Winlog.Computer == "" {
			t.Errorf("artifact %s: source %q, winlog %+v", a.ID, a.Source, doc.Winlog)
		}
		// The record's own time (July 2020), not the time of the import.
		if !strings.HasPrefix(doc.Timestamp, "2020-07-22T") || a.Timestamp.Year() != 2020 {
			t.Errorf("artifact %s: @timestamp %q, stored time %v", a.ID, doc.Timestamp, a.Timestamp)
		}
		ids[strconv.FormatUint(doc.Winlog.RecordID, 10)] = true
	}
	if len(ids) != 12 {
		t.Errorf("%d distinct record ids among %d artifacts", len(ids), len(arts))
	}

	// Again: each record is the same artifact.
	if out, err := vigilImport(writer, p, spray); err != nil {
		t.Fatalf("second import: %v\n%s", err, out)
	}

	// A file of 10 chunks with a byte of its second chunk's records changed.
	whole, err := os.ReadFile(filepath.Join(evtxDir, "Lateral Movement/LM_5145_Remote_FileCopy.evtx"))
	if err != nil {
		t.Fatal(err)
	}
	const chunkOff = 4096 + 65536
	firstChunk := recordsIn(t, whole[4096:chunkOff])
	secondChunk := recordsIn(t, whole[chunkOff:chunkOff+65536])
	damaged := append([]byte{}, whole...)
	damaged[chunkOff+1000] ^= 0xff
	path := filepath.Join(t.TempDir(), "damaged.evtx")
	if err := os.WriteFile(path, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = vigilImport(writer, p, path)
	if err == nil {
		t.Errorf("vigil import of a damaged file exited 0:\n%s", out)
	}
	if !strings.Contains(out, path+": offset "+strconv.Itoa(chunkOff)) {
		t.Errorf("the damage is not named by file and offset:\n%s", out)
	}
	const fileRecords = 869 // INDEX.md
	want := 12 + fileRecords - secondChunk
	if firstChunk == 0 || secondChunk == 0 {
		t.Fatalf("chunks of %d and %d records", firstChunk, secondChunk)
	}
	awaitTotal(t, ctx, reader, want, "the spray and the damaged file's other chunks")
	page, err := reader.Artifacts(ctx, client.ArtifactQuery{Source: "windows", Limit: 1})
	if err != nil || page.Total != want {
		t.Errorf("source=windows: %v, %v; want %d", page, err, want)
	}
}

// recordsIn counts the record signatures of one chunk's used part.
func recordsIn(t *testing.T, chunk []byte) int {
	t.Helper()
	free := binary.LittleEndian.Uint32(chunk[48:])
	n := 0
	for pos := 512; pos+8 <= int(free); {
		size := int(binary.LittleEndian.Uint32(chunk[pos+4:]))
		if string(chunk[pos:pos+4]) != "**\x00\x00" || size <= 0 {
			t.Fatalf("no record at %d", pos)
		}
		n++
		pos += size
	}
	return n
}

// vigilImport runs `vigil import` against p and returns its output.
func vigilImport(token string, p *proc, files ...string) (string, error) {
	cmd := exec.Command(vigilBin, append([]string{"import", "--url", p.base, "--token", token}, files...)...)
	cmd.Env = childEnv()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

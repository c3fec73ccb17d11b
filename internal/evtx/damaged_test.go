package evtx

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readAll reads every record of b, collecting the chunk errors met.
func readAll(t testing.TB, b []byte) (n int, errs []*ChunkError) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	for {
		_, err := r.Next()
		if errors.Is(err, io.EOF) {
			return n, errs
		}
		var ce *ChunkError
		if errors.As(err, &ce) {
			errs = append(errs, ce)
			continue
		}
		if err != nil {
			t.Fatalf("error that is no *ChunkError: %v", err)
		}
		n++
	}
}

func mustRead(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(datasetDir, rel))
	if err != nil {
		t.Fatalf("datasets (../shared/datasets beside the checkout): %v", err)
	}
	return b
}

// chunkRecords counts the records of each chunk of a whole file.
func chunkRecords(t *testing.T, b []byte) []int {
	var out []int
	for off := fileHeaderSize; off+chunkSize <= len(b); off += chunkSize {
		if !bytes.Equal(b[off:off+8], chunkMagic) {
			break
		}
		one := append(append([]byte{}, b[:fileHeaderSize]...), b[off:off+chunkSize]...)
		n, errs := readAll(t, one)
		if len(errs) > 0 {
			t.Fatalf("chunk at %d: %v", off, errs[0])
		}
		out = append(out, n)
	}
	return out
}

func TestDamagedChunk(t *testing.T) {
	whole := mustRead(t, "Lateral Movement/LM_5145_Remote_FileCopy.evtx")
	total, errs := readAll(t, whole)
	if len(errs) > 0 || total == 0 {
		t.Fatalf("whole file: %d records, errors %v", total, errs)
	}
	per := chunkRecords(t, whole)
	if len(per) < 3 {
		t.Fatalf("want a file of 3 chunks or more, have %d", len(per))
	}
	damage := []struct {
		name string
		at   int // offset within chunk 1
	}{
		{"a byte of a record", chunkHeaderSize + 100},
		{"the chunk header", 20},
		{"the string table", 200},
	}
	for _, d := range damage {
		t.Run(d.name, func(t *testing.T) {
			b := append([]byte{}, whole...)
			chunkOff := fileHeaderSize + chunkSize
			b[chunkOff+d.at] ^= 0xff
			n, errs := readAll(t, b)
			if len(errs) != 1 || errs[0].Offset != int64(chunkOff) {
				t.Fatalf("errors %v, want one at offset %d", errs, chunkOff)
			}
			if want := total - per[1]; n != want {
				t.Errorf("read %d records around the damaged chunk, want %d", n, want)
			}
		})
	}
}

func TestTruncatedFile(t *testing.T) {
	whole := mustRead(t, "Lateral Movement/LM_5145_Remote_FileCopy.evtx")
	per := chunkRecords(t, whole)
	cut := whole[:fileHeaderSize+chunkSize+chunkSize/2]
	n, errs := readAll(t, cut)
	if n != per[0] {
		t.Errorf("read %d records of the whole first chunk, want %d", n, per[0])
	}
	if len(errs) != 1 || errs[0].Offset != fileHeaderSize+chunkSize {
		t.Errorf("errors %v, want one naming the cut chunk at %d", errs, fileHeaderSize+chunkSize)
	}
	if _, err := NewReader(bytes.NewReader(whole[:100])); err == nil {
		t.Error("a file cut inside its header was read")
	}
	if _, err := NewReader(bytes.NewReader(bytes.Repeat([]byte("x"), 5000))); err == nil {
		t.Error("a file that is no EVTX was read")
	}
}

// TestUnknownTemplate: a record whose template instance names a template
// the chunk does not hold is one error naming that record's offset; the
// chunk's other records are read. The record of the real recording is
// pointed at an offset outside its chunk (checksums made to match, as a
// writer that lost the definition would leave it).
func TestUnknownTemplate(t *testing.T) {
	whole := mustRead(t, "Credential Access/kerberos_pwd_spray_4771.evtx")
	b := append([]byte{}, whole[:fileHeaderSize+chunkSize]...)
	var offsets []int64
	r, err := NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, rec.Offset)
	}
	le := binary.LittleEndian
	victim := int64(-1)
	for _, off := range offsets[1 : len(offsets)-1] {
		// Record header (24 bytes), fragment header (4), then the
		// template instance token: its definition's offset at +6, in
		// the chunk; a definition inline starts right after the token.
		tok := int(off) + 24 + 4
		if b[tok] != 0x0c {
			continue
		}
		chunkOff := fileHeaderSize
		if int(le.Uint32(b[tok+6:])) == tok-chunkOff+10 {
			continue // defined here: later records may use it
		}
		le.PutUint32(b[tok+6:], 0x7ffffff0)
		victim = off
		break
	}
	if victim < 0 {
		t.Fatal("no record of the recording refers to a template defined before it")
	}
	fixChecksums(b)
	n, errs := readAll(t, b)
	if len(errs) != 1 || errs[0].Offset != victim || !strings.Contains(errs[0].Error(), "template") {
		t.Fatalf("errors %v, want one naming the record at %d and its template", errs, victim)
	}
	if n != len(offsets)-1 {
		t.Errorf("read %d records besides the damaged one, want %d", n, len(offsets)-1)
	}
}

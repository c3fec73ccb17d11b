package evtx

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"testing"
)

// FuzzReader feeds damaged files to the reader: it must return records or
// errors, never panic or loop. The seeds are the first chunk of real
// recordings; the fuzzer mutates them, and their chunk checksums are made
// to match so that the mutations reach the binary XML.
func FuzzReader(f *testing.F) {
	for _, rel := range []string{
		"Credential Access/kerberos_pwd_spray_4771.evtx",
		"Defense Evasion/DE_1102_security_log_cleared.evtx",
		"AutomatedTestingTools/Malware/rundll32_cmd_schtask.evtx",
	} {
		b := mustRead(f, rel)
		f.Add(b[:fileHeaderSize+chunkSize])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// Checksums made right, so that mutations reach the binary XML.
		fixChecksums(b)
		r, err := NewReader(bytes.NewReader(b))
		if err != nil {
			return
		}
		for i := 0; ; i++ {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if i > len(b) {
				t.Fatal("more results than bytes")
			}
			if err == nil {
				if _, err := rec.Winlogbeat(); err != nil && rec.Event.Child("System") != nil {
					t.Fatalf("record with a System element not rendered: %v", err)
				}
			}
		}
	})
}

// fixChecksums sets the header and records checksums of every whole chunk
// in b to match its bytes.
func fixChecksums(b []byte) {
	le := binary.LittleEndian
	for off := fileHeaderSize; off+chunkSize <= len(b); off += chunkSize {
		c := b[off : off+chunkSize]
		if free := le.Uint32(c[48:]); free >= chunkHeaderSize && free <= chunkSize {
			le.PutUint32(c[52:], crc32.ChecksumIEEE(c[chunkHeaderSize:free]))
		}
		sum := crc32.ChecksumIEEE(c[:120])
		le.PutUint32(c[124:], crc32.Update(sum, crc32.IEEETable, c[128:chunkHeaderSize]))
	}
}

package esbulk

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
)

// FuzzParse: whatever the body, Scan returns items or an invalid-input
// error, never panics; every item is answered (taken with an artifact of
// valid text, or refused with an error), and every artifact is of a valid
// source and at most vigil.MaxRawBytes.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"create":{}}` + "\n" + `{"message":"` + strings.ReplaceAll(sshdLine, `"`, `\"`) + `"}` + "\n",
		`{"index":{"_index":"auth","_id":"1"}}` + "\n" + eveLine + "\n",
		`{"delete":{"_id":"1"}}` + "\n" + `{"update":{"_id":"1"}}` + "\n{}\n",
		`{"create":{}}` + "\n" + `{"log":"x","log.file.path":"/var/log/auth.log","event":{"dataset":"system.auth"}}`,
		"\n\n{\"create\":{}}\r\n{\"message\":\"\\ud800\"}\r\n",
		`{"create":{"_index":5}}` + "\n{}\n",
		`{"create":{}}` + "\n" + `{"message":"a","@timestamp":"0000-01-01T00:00:00Z"}`,
	} {
		f.Add([]byte(s), "filebeat-8")
	}
	f.Fuzz(func(t *testing.T, body []byte, index string) {
		req, err := readBulk(body, "org-a", index, now)
		if err != nil {
			if vigil.ErrorCode(err) != vigil.EINVALID {
				t.Fatalf("error %v, want invalid", err)
			}
			return
		}
		for i := range req.Len() {
			switch it, a := req.Item(i), req.art(i); {
			case a == nil && (it.Error == nil || it.Status < 400):
				t.Fatalf("item %d refused without an error: %+v", i, it)
			case a != nil:
				if it.Status != 201 || it.Error != nil || vigil.ValidateSource(a.Source) != "" || len(a.Raw) == 0 || len(a.Raw) > vigil.MaxRawBytes ||
					!utf8.ValidString(a.Raw) || !utf8.Valid(a.Metadata) || !vigil.ValidID(a.ID) || (it.ID == "" && it.docID() != a.ID) {
					t.Fatalf("item %d: %+v", i, it)
				}
			}
		}
	})
}

package esbulk

import (
	"bytes"
	"encoding/json"
	"testing"
)

// refAction reads an action line with encoding/json, as Scan did before
// it walked the line: the reference parseAction must agree with.
func refAction(l []byte) (string, action, bool) {
	if !json.Valid(l) {
		return "", action{}, false
	}
	dec := json.NewDecoder(bytes.NewReader(l))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", action{}, false
	}
	var name string
	var meta json.RawMessage
	n := 0
	for ; dec.More(); n++ {
		k, err := dec.Token()
		if err != nil {
			return "", action{}, false
		}
		name = k.(string)
		if err := dec.Decode(&meta); err != nil {
			return "", action{}, false
		}
	}
	switch {
	case n != 1:
		return "", action{}, false
	case name != "index" && name != "create" && name != "update" && name != "delete":
		return "", action{}, false
	case string(meta) == "null":
		return name, action{}, true
	}
	var members map[string]json.RawMessage
	if meta[0] != '{' || json.Unmarshal(meta, &members) != nil {
		return "", action{}, false
	}
	var a action
	for key, dst := range map[string]*string{"_index": &a.Index, "_id": &a.ID} {
		if v, ok := members[key]; ok {
			var s *string
			if json.Unmarshal(v, &s) != nil {
				return "", action{}, false
			}
			if s != nil {
				*dst = *s
			}
		}
	}
	return name, a, true
}

// FuzzParseAction: the walk of an action line agrees with encoding/json's
// reading of it (one member naming a known action, whose metadata is null
// or an object with string or null _index and _id), whatever the line.
func FuzzParseAction(f *testing.F) {
	for _, s := range []string{
		`{"create":{}}`, `{"index":{"_index":"filebeat-8.19.0","_id":"a1"}}`, `{ "delete" : { "_id" : "x" } }`,
		`{"create":{},"index":{}}`, `{"create":{},"create":{}}`, `{}`, `[]`, `null`, `{"create":null}`, `{"create":"x"}`,
		`{"create":{"_index":5}}`, `{"create":{"_index":"a","_index":"b"}}`, `{"create":{"_index":5,"_index":"b"}}`,
		`{"cre\u0061te":{"_ind\u0065x":"a\"b","routing":[1,{"x":"}"}],"_id":null}}`, `{"upsert":{}}`, `{"create":{}} x`,
		`{"create":{"_index":"\xff"}}`, `{"create":[{"_index":"a"}]}`, `{"create":{"_index":true}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, l []byte) {
		l = bytes.TrimSpace(l)
		name, a, err := parseAction(l)
		rname, ra, ok := refAction(l)
		if (err == nil) != ok || name != rname || a != ra {
			t.Fatalf("%q: parseAction %q %+v %v; encoding/json %q %+v %v", l, name, a, err, rname, ra, ok)
		}
	})
}

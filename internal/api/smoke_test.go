package api_test

import (
	"net/http"
	"testing"
)

func TestObservationOpensIncident(t *testing.T) {
	e := newEnv(t)
	tok := e.token("org-a", "admin")
	arts := must(t, e.do("POST", "/v1/artifacts", tok, map[string]any{"artifacts": []any{
		map[string]any{"source": "auth", "raw": "Jun 14 15:16:01 combo sshd(pam_unix)[19939]: authentication failure; logname= uid=0 euid=0 tty=NODEVssh ruser= rhost=218.188.2.4"},
		map[string]any{"source": "", "raw": "x"},
	}}), http.StatusAccepted)
	if got := arts.data()["accepted"]; got != float64(1) {
		t.Fatalf("accepted = %v, want 1; %s", got, arts.Raw)
	}
	ids := arts.data()["ids"].([]any)
	obs := must(t, e.do("POST", "/v1/observations", tok, map[string]any{
		"type": "auth", "description": "failed login", "artifact_ids": ids,
	}), http.StatusCreated)
	if obs.data()["severity"] != "medium" {
		t.Errorf("default severity = %v", obs.data()["severity"])
	}
	list := must(t, e.do("GET", "/api/v1/incidents", tok, nil), http.StatusOK)
	if list.data()["total"] != float64(1) {
		t.Fatalf("incidents total = %v; %s", list.data()["total"], list.Raw)
	}
	inc := list.data()["incidents"].([]any)[0].(map[string]any)
	if inc["artifact_count"] != float64(1) || inc["status_name"] != "New" {
		t.Errorf("incident = %v", inc)
	}
	got := must(t, e.do("GET", "/v1/artifacts?query=218.188.2.4", tok, nil), http.StatusOK)
	if got.data()["total"] != float64(1) {
		t.Errorf("search total = %v; %s", got.data()["total"], got.Raw)
	}
}

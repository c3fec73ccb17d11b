package api_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-soc/vigil/internal/evtx"
)

// kerberosFailure is a Windows base rule: Kerberos authentication failures
// (4768 refused, 4771 pre-authentication failed) on a domain controller.
const kerberosFailure = `title: Kerberos authentication failed
id: 5d2c3a1e-7b4f-4c8e-9a61-0f3e2b1c4d5a
name: kerberos_failure
status: test
author: Vigil
logsource:
    product: windows
    service: security
detection:
    selection:
        EventID:
            - 4768
            - 4771
    filter:
        Status: '0x0'
    condition: selection and not filter
level: low
`

// kerberosSpray is a Sigma correlation over it: failures on 5 accounts or
// more from one client address within 5 minutes.
const kerberosSpray = `title: Kerberos password spray
id: 6e3d4b2f-8c5a-4d9f-ab72-1f4e3c2d5e6b
author: Vigil
status: test
correlation:
    type: value_count
    rules:
        - kerberos_failure
    group-by:
        - IpAddress
    timespan: 5m
    condition:
        field: TargetUserName
        gte: 5
level: high
`

// TestSigmaWindowsCorrelation: a Sigma correlation rule over a Windows
// base rule runs on Windows events as on the others. The real Kerberos
// spray recording, posted as vigil import sends it, makes one correlation
// observation for its one client, counting its nine accounts.
func TestSigmaWindowsCorrelation(t *testing.T) {
	e := newDetectingEnv(t)
	tok := e.token("org-a", "signals:manage", "signals:write", "observations:read")
	base := postRule(t, e, tok, kerberosFailure)
	must(t, call(t, e, "POST", "/v1/detection-rules/"+base["id"].(string)+"/disable", tok, nil), http.StatusOK)
	postRule(t, e, tok, kerberosSpray)

	docs, err := evtx.Documents(filepath.Join("..", "..", "..", "shared", "datasets", "windows", "evtx", "Credential Access", "kerberos_pwd_spray_4771.evtx"))
	if err != nil {
		t.Fatalf("datasets (../shared/datasets beside the checkout): %v", err)
	}
	var arts []map[string]any
	for _, doc := range docs {
		arts = append(arts, map[string]any{"source": "windows", "raw": string(doc)})
	}
	postArtifacts(t, e, tok, arts...)

	d := must(t, call(t, e, "GET", "/v1/observations?limit=1000", tok, nil), http.StatusOK).data()
	var corr []string
	for _, x := range d["observations"].([]any) {
		o := x.(map[string]any)
		desc := o["description"].(string)
		if strings.HasPrefix(desc, "Sigma correlation Kerberos password spray") {
			corr = append(corr, desc)
			if o["severity"] != "high" {
				t.Errorf("correlation observation %v", o)
			}
		}
		if strings.HasPrefix(desc, "Sigma rule Kerberos authentication failed") {
			t.Errorf("the disabled base rule reported: %s", desc)
		}
	}
	if len(corr) != 1 || !strings.Contains(corr[0], "172.16.66.1") || !strings.Contains(corr[0], "9") {
		t.Errorf("correlation observations %q, want one for 172.16.66.1 with its 9 accounts", corr)
	}
}

package parse

import "testing"

// TestNameAccessRights: an AccessList as the recordings hold it (5145 of
// LM_REMCOM_5145_TargetHost.evtx) gets each right's name beside its
// number, so that rules find it by either.
func TestNameAccessRights(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"%%1538\r\n\t\t\t\t%%1541\r\n\t\t\t\t%%4417\r\n\t\t\t\t",
			"%%1538 READ_CONTROL\n%%1541 SYNCHRONIZE\n%%4417 WriteData (or AddFile)"},
		{"%%4423\r\n\t\t\t\t", "%%4423 ReadAttributes"},
		{"%%4484 %%1537", "%%4484\n%%1537 DELETE"}, // a process right it does not name
		{"-", "-"},
		{"", ""},
		{"READ_CONTROL", "READ_CONTROL"},
	} {
		if got := nameAccessRights(tc.in); got != tc.want {
			t.Errorf("nameAccessRights(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

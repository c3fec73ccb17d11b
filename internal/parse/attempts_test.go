package parse

import "testing"

// TestAttemptRoles: what each failure line is to a count of attempts
// (vigil.attempt.role and .count). The lines are real ones of
// ../shared/datasets (file named), so that a guess counts once however
// many lines sshd, PAM and sudo write about it.
func TestAttemptRoles(t *testing.T) {
	tests := []struct {
		name, line string
		role       string // "" for none
		count      int64
	}{
		// integrations-test-secure-rhel7.log: one sshd connection.
		{"sshd: a guessed password", "Feb 22 16:45:20 slave22 sshd[2738]: Failed password for root from 202.109.143.106 port 1786 ssh2", "attempt", 1},
		{"PAM: the recap at the connection's end", "Feb 22 16:45:26 slave22 sshd[2738]: PAM 4 more authentication failures; logname= uid=0 euid=0 tty=ssh ruser= rhost=202.109.143.106  user=root", "recap", 4},
		{"PAM: max retries", "Feb 22 16:45:26 slave22 sshd[2738]: PAM service(sshd) ignoring max retries; 5 > 3", "recap", 0},
		{"PAM: the first failure of a connection", "Feb 22 16:45:32 slave22 sshd[2742]: pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh ruser= rhost=202.109.143.106  user=root", "context", 0},
		{"pam_succeed_if: no failure of its own", "Feb 22 16:45:20 slave22 sshd[2738]: pam_succeed_if(sshd:auth): requirement \"uid >= 1000\" not met by user \"root\"", "", 0},
		// fail2ban-sshd.log
		{"sshd: maximum attempts", "Nov 23 21:50:37 myhost sshd[21810]: error: maximum authentication attempts exceeded for root from 61.0.0.1 port 49940 ssh2 [preauth]", "recap", 0},
		{"sshd: too many failures", "Nov 28 09:16:05 srv sshd[32310]: Disconnecting: Too many authentication failures for git [preauth]", "recap", 0},
		{"sshd: a keyboard-interactive guess", "Apr 29 12:53:38 Jamess-iMac.local sshd[47831]: error: PAM: authentication failure for james from 205.186.180.88 via 192.168.1.201", "attempt", 1},
		{"sshd: an unknown user's keyboard-interactive guess", "Dec 12 20:04:39 aragorn sshd[1328]: error: PAM: User not known to the underlying authentication module for illegal user kernelitshell from 10.215.4.227 ", "attempt", 1},
		{"sshd: a probe", "Mar 19 16:47:48 test sshd[5672]: Invalid user admin from 192.0.2.117 port 44004", "probe", 0},
		{"sshd: an account locked", "Apr 27 13:02:04 host sshd[29116]: User root not allowed because account is locked", "probe", 0},
		{"sshd: the probe repeated", "Apr 27 13:02:04 host sshd[29116]: input_userauth_request: invalid user root [preauth]", "context", 0},
		{"sshd: a method it cannot name", "<38>1 2019-07-08T17:40:16.954167-04:00 hostname.example.com sshd 57915 - - Failed unknown for invalid user redmond from 192.0.2.1 port 59197 ssh2", "attempt", 1},
		{"sshd: a key the client holds", "Nov 28 09:16:03 srv sshd[32307]: Failed publickey for git from 192.0.2.1 port 57904 ssh2: ECDSA 0e:ff:xx:xx:xx:xx:xx:xx:xx:xx:xx:xx:xx:xx:xx:xx", "context", 0},
		{"sshd: a connection closed", "Mar 15 09:21:01 host sshd[2717]: Connection closed by 192.0.2.212 [preauth]", "", 0},
		// loghub-Linux_2k.log: old-style PAM, the only record of a guess.
		{"old-style PAM", "Jul 10 16:01:43 combo sshd(pam_unix)[30530]: authentication failure; logname= uid=0 euid=0 tty=NODEVssh ruser= rhost=150.183.249.110  user=root", "attempt", 1},
		{"old-style PAM: unknown user", "Jun 15 12:12:34 combo sshd(pam_unix)[23397]: check pass; user unknown", "context", 0},
		// fail2ban-pam-generic.log
		{"(pam_unix) of an FTP server", "Feb  7 15:10:42 example pure-ftpd: (pam_unix) authentication failure; logname= uid=0 euid=0 tty=pure-ftpd ruser=sample-user rhost=192.168.1.1 ", "attempt", 1},
		// integrations-test-auth-ubuntu1204.log: a sudo run of 3 wrong
		// passwords, then a run not in sudoers.
		{"sudo: PAM's line of the run", "Feb 24 00:12:20 precise32 sudo: pam_unix(sudo:auth): authentication failure; logname=vagrant uid=1001 euid=0 tty=/dev/pts/1 ruser=tsg rhost=  user=tsg", "context", 0},
		{"sudo: 3 incorrect passwords", "Feb 24 00:12:42 precise32 sudo:      tsg : 3 incorrect password attempts ; TTY=pts/1 ; PWD=/home/vagrant ; USER=root ; COMMAND=/bin/ls", "attempt", 3},
		{"sudo: not in sudoers", "Feb 24 00:13:02 precise32 sudo:      tsg : user NOT in sudoers ; TTY=pts/1 ; PWD=/home/vagrant ; USER=root ; COMMAND=/bin/ls", "attempt", 1},
		{"su: success", "Feb 24 00:12:14 precise32 su[4496]: Successful su for tsg by root", "", 0},
		// crowdsec-hub-sshd-pam-tests.log
		{"sudo: a lock-out", "Dec  7 14:53:04 vskub1master01p sudo: pam_tally2(sudo:auth): user zbadguy (4001) tally 6, deny 5", "recap", 0},
		// loghub-Linux_2k.log: klogind's failure.
		{"another service's failure", "Jun 30 20:53:04 combo klogind[19272]: Authentication failed from 163.27.187.39 (163.27.187.39): Permission denied in replay cache code ", "attempt", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := Parse("auth", []byte(tt.line), goldenRef).Event
			role, _ := ev["vigil.attempt.role"].(string)
			count, _ := ev["vigil.attempt.count"].(int64)
			if role != tt.role || count != tt.count {
				t.Errorf("role %q count %d, want %q %d (event %v)", role, count, tt.role, tt.count, ev)
			}
		})
	}
}

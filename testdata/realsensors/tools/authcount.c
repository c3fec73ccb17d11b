// authcount.c: an LD_PRELOAD observer of an SSH client built on libssh
// (hydra): every password the client submits with
// ssh_userauth_password() is appended to $AUTHCOUNT_LOG as
// "user<TAB>password<TAB>result" before the real call returns, result
// being libssh's code (0 success, 1 denied, 2 partial, 4 again, -1
// error; sshd closing the connection after the password it checked at
// MaxAuthTries gives 4). hydra's -V lines name each (user,
// password) pair once; this counts what went over the wire, including
// the guess hydra sends again after sshd cut the connection at
// MaxAuthTries.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct ssh_session_struct *ssh_session;
typedef int (*password_fn)(ssh_session, const char *, const char *);
typedef int (*options_fn)(ssh_session, int, const void *);

// hydra names the user with ssh_options_set(SSH_OPTIONS_USER) and passes
// NULL to ssh_userauth_password; each child process has one session at a
// time.
static char session_user[256];

int ssh_options_set(ssh_session session, int type, const void *value) {
	static options_fn real;
	if (!real)
		real = (options_fn)dlsym(RTLD_NEXT, "ssh_options_set");
	if (type == 4 /* SSH_OPTIONS_USER */ && value)
		snprintf(session_user, sizeof session_user, "%s", (const char *)value);
	return real(session, type, value);
}

int ssh_userauth_password(ssh_session session, const char *username, const char *password) {
	static password_fn real;
	if (!real)
		real = (password_fn)dlsym(RTLD_NEXT, "ssh_userauth_password");
	int rc = real(session, username, password);
	const char *path = getenv("AUTHCOUNT_LOG");
	if (path) {
		char line[1024];
		int n = snprintf(line, sizeof line, "%s\t%s\t%d\n", username ? username : session_user, password ? password : "", rc);
		int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
		if (fd >= 0) {
			if (n > 0 && write(fd, line, (size_t)n) < 0) {
				// nothing to do: the count would be short, and the
				// scenario compares it with hydra's own.
			}
			close(fd);
		}
	}
	return rc;
}

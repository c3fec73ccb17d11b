// Package e2e holds end-to-end tests that run the vigil binary as child processes.
package e2e

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/auth"
)

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*m = append(*m, p)
		}
	}
	return nil
}

func runToken(_ context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	c.flags(fs)
	org := fs.String("org", "", "organization id (org_id claim), required")
	sub := fs.String("sub", "dev", "subject (user) of the token")
	ttl := fs.Duration("ttl", 24*time.Hour, "lifetime of the token")
	var perms, roles multi
	fs.Var(&perms, "permission", "permission to grant (repeatable, or comma-separated)")
	fs.Var(&roles, "role", "role name of the org to grant (repeatable, or comma-separated)")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	if *org == "" {
		return fmt.Errorf("--org is required")
	}
	if *ttl <= 0 {
		return fmt.Errorf("--ttl must be positive")
	}
	for _, p := range perms {
		if !vigil.KnownPermission(p) {
			return fmt.Errorf("unknown permission %q; known: %s", p, strings.Join(vigil.Catalog, ", "))
		}
	}
	secret, err := c.jwtSecret(true)
	if err != nil {
		return err
	}
	tok, err := auth.Mint(secret, auth.Claims{Subject: *sub, OrgID: *org, Roles: roles, Permissions: perms}, *ttl, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, tok)
	return nil
}

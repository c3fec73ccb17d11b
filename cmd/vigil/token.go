package main

import (
	"context"
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
	fs := newFlagSet("token", "Mints an HS256 JWT signed with the server's secret (the one in its --data-dir, or --jwt-secret).", stderr)
	var c config
	c.dataDirFlag(fs)
	c.secretFlag(fs)
	org := fs.String("org", "", "organization id (org_id claim), required")
	sub := fs.String("sub", "dev", "subject (user) of the token")
	ttl := fs.Duration("ttl", 24*time.Hour, "lifetime of the token (a shipper needs a long one, e.g. 8760h, or an ingest key)")
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
	secret, err := c.jwtSecret(false)
	if err != nil {
		return err
	}
	now := time.Now()
	tok, err := auth.Mint(secret, auth.Claims{Subject: *sub, OrgID: *org, Roles: roles, Permissions: perms}, *ttl, now)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, tok)
	// On stderr, so that $(vigil token …) captures the token alone.
	fmt.Fprintf(stderr, "token for org %s, sub %s: expires %s (in %s; --ttl sets it)\n",
		*org, *sub, now.Add(*ttl).UTC().Format(time.RFC3339), *ttl)
	return nil
}

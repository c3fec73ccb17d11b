package syslog

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/vigil-soc/vigil"
)

// tlsConfig loads a TLS listener's certificate and, for mutual TLS, the
// CA bundle its clients' certificates must chain to.
func tlsConfig(c Config) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("server certificate: %w", err)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if c.ClientCA != "" {
		pem, err := os.ReadFile(c.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client-ca: no PEM certificate in %s", c.ClientCA)
		}
		tc.ClientCAs = pool
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return tc, nil
}

// handshake completes the TLS handshake within handshakeTimeout and
// returns the org of the connection and the client certificate's subject
// (empty without mutual TLS); ok is false when the connection is refused.
func (l *listener) handshake(tc *tls.Conn, peer string) (org, client string, ok bool) {
	ctx, cancel := context.WithTimeout(l.s.ctx, handshakeTimeout)
	defer cancel()
	refuse := func(reason, msg string, err error) (string, string, bool) {
		l.s.m.refused.WithLabelValues(l.cfg.Name, reason).Inc()
		attrs := []any{slog.String("listener", l.cfg.Name), slog.String("peer", peer)}
		if err != nil {
			attrs = append(attrs, slog.String("error", err.Error()))
		}
		l.s.log.Warn("syslog: connection refused: "+msg, attrs...)
		return "", "", false
	}
	if err := tc.HandshakeContext(ctx); err != nil {
		if l.s.ctx.Err() != nil {
			return "", "", false
		}
		return refuse("tls", "TLS handshake failed", err)
	}
	tc.SetDeadline(time.Time{})
	org = l.cfg.Org
	st := tc.ConnectionState()
	if len(st.PeerCertificates) == 0 {
		return org, "", true
	}
	leaf := st.PeerCertificates[0]
	client = leaf.Subject.String()
	if l.cfg.OrgFrom == "" {
		return org, client, true
	}
	org = certOrg(leaf, l.cfg.OrgFrom)
	if err := checkOrg(org); err != nil {
		return refuse("org", "the client certificate names no org", fmt.Errorf("subject %q, org-from=%s: %w", client, l.cfg.OrgFrom, err))
	}
	return org, client, true
}

// certOrg is the org a client certificate names: its subject's common
// name, or its first organization or organizational unit.
func certOrg(cert *x509.Certificate, from string) string {
	first := func(s []string) string {
		if len(s) == 0 {
			return ""
		}
		return s[0]
	}
	switch from {
	case "cn":
		return cert.Subject.CommonName
	case "o":
		return first(cert.Subject.Organization)
	case "ou":
		return first(cert.Subject.OrganizationalUnit)
	}
	return ""
}

// checkOrg refuses an org id no token could carry (vigil.ValidOrgID): its
// artifacts would be stored where no one can read them.
func checkOrg(org string) error {
	if !vigil.ValidOrgID(org) {
		return errors.New("not an org id (" + vigil.OrgIDRule + ")")
	}
	return nil
}

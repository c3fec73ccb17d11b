package console_test

import (
	"testing"
	"time"

	"github.com/vigil-soc/vigil/internal/console"
)

// TestBrowserOIDC signs in through a real OpenID Provider in Debian's
// Chromium (browser/oidc.mjs): the button on the sign-in page, the
// provider's login form, back to the queue signed in as the provider's
// user with the org of its claims, sign-out. The provider is on
// "localhost" and the console on 127.0.0.1, two sites, so that the
// provider's redirect back is the cross-site navigation it is in real
// use (the session cookie is SameSite=Strict). It fails, never skips,
// when node, Chromium or playwright-core is missing.
func TestBrowserOIDC(t *testing.T) {
	node, chromium := browserTools(t)
	vigil, late := startServer(t)
	issuer := startProvider(t, "localhost", vigil.URL)
	startVigil(t, late, console.OIDC{Issuer: issuer, ClientID: clientID, ClientSecret: clientSecret, Name: "Example IdP"},
		issuer+"/keys", issuer, clientID)

	runBrowser(t, node, chromium, "oidc.mjs", 2*time.Minute, "BASE_URL="+vigil.URL, "ISSUER="+issuer,
		"OIDC_USER=test-user@localhost", "OIDC_PASSWORD="+password)
}

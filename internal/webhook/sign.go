package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
)

// The headers of a delivery (docs/events.md, Webhooks).
const (
	// HeaderID is the delivery's id, the same at every attempt: a
	// receiver drops a delivery whose id it already took.
	HeaderID = "Vigil-Webhook-Id"
	// HeaderTimestamp is when this attempt was signed, in Unix seconds.
	HeaderTimestamp = "Vigil-Webhook-Timestamp"
	// HeaderSignature is "v1=" and the hex HMAC-SHA256, keyed by the
	// subscription's secret, of the timestamp, ".", and the body.
	HeaderSignature = "Vigil-Webhook-Signature"
	// HeaderEvent is the event's type.
	HeaderEvent = "Vigil-Webhook-Event"
)

// SecretPrefix begins the secrets Vigil generates.
const SecretPrefix = "whsec_"

// NewSecret returns a secret of 256 random bits.
func NewSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return SecretPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// CheckSecret returns a 400 naming field secret unless s may be a secret
// given by a client: printable ASCII, MinWebhookSecretLen to
// MaxWebhookSecretLen bytes.
func CheckSecret(s string) error {
	if len(s) < vigil.MinWebhookSecretLen || len(s) > vigil.MaxWebhookSecretLen {
		return vigil.InvalidField("secret", fmt.Sprintf("must be %d to %d characters", vigil.MinWebhookSecretLen, vigil.MaxWebhookSecretLen))
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return vigil.InvalidField("secret", "must be printable ASCII without spaces")
		}
	}
	return nil
}

// Sign returns the value of HeaderSignature for body sent at ts.
func Sign(secret string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(ts, 10)))
	m.Write([]byte("."))
	m.Write(body)
	return "v1=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks a delivery as a receiver does: the signature over the
// timestamp and the body, and a timestamp within tolerance of now (an
// old delivery replayed is refused).
func Verify(secret string, h http.Header, body []byte, tolerance time.Duration, now time.Time) error {
	ts, err := strconv.ParseInt(h.Get(HeaderTimestamp), 10, 64)
	if err != nil {
		return errors.New("webhook: no timestamp")
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return errors.New("webhook: timestamp out of tolerance")
	}
	want := Sign(secret, ts, body)
	// Several signatures may be sent (a secret being rotated): any one.
	for _, sig := range strings.Split(h.Get(HeaderSignature), " ") {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return errors.New("webhook: signature mismatch")
}

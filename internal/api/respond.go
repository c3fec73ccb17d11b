package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"reflect"
	"strings"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/parse"
)

// MaxBodyBytes bounds every request body (413 above it), so that what one
// request makes the server hold in memory is bounded.
const MaxBodyBytes = 10 << 20

// statusOf is the one map from error code to HTTP status.
var statusOf = map[string]int{
	vigil.EINVALID:       http.StatusBadRequest,
	vigil.EUNAUTHORIZED:  http.StatusUnauthorized,
	vigil.EFORBIDDEN:     http.StatusForbidden,
	vigil.ENOTFOUND:      http.StatusNotFound,
	vigil.ETIMEOUT:       http.StatusRequestTimeout,
	vigil.ECONFLICT:      http.StatusConflict,
	vigil.ETOOLARGE:      http.StatusRequestEntityTooLarge,
	vigil.EUNSUPPORTED:   http.StatusUnsupportedMediaType,
	vigil.ERATELIMITED:   http.StatusTooManyRequests,
	vigil.EUNAVAILABLE:   http.StatusServiceUnavailable,
	vigil.ENOSPACE:       http.StatusInsufficientStorage,
	vigil.EINTERNAL:      http.StatusInternalServerError,
	"method_not_allowed": http.StatusMethodNotAllowed,
}

type envelope struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
	Data    any    `json:"data"`
}

type errorBody struct {
	Success bool      `json:"success"`
	Message string    `json:"message"`
	Error   errorInfo `json:"error"`
}

type errorInfo struct {
	Code    string             `json:"code"`
	Details []vigil.FieldIssue `json:"details"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// ok writes a success envelope.
func ok(w http.ResponseWriter, status int, msg string, data any) {
	writeJSON(w, status, envelope{Success: true, Message: msg, Data: data})
}

// fail writes err in the error envelope. Internal errors are logged with
// the request id and shown only as "internal error".
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	err = timedOut(r.Context(), err, "the request did not finish in time and was stopped; retry later")
	code := vigil.ErrorCode(err)
	status, known := statusOf[code]
	if !known {
		status, code = http.StatusInternalServerError, vigil.EINTERNAL
	}
	if status >= 500 {
		s.log.ErrorContext(r.Context(), "request failed", slog.String("request_id", requestID(r.Context())),
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("error", err.Error()))
	}
	if code == vigil.ERATELIMITED || errors.Is(err, errBodyBusy) {
		w.Header().Set("Retry-After", "1")
	}
	details := vigil.ErrorDetails(err)
	if details == nil {
		details = []vigil.FieldIssue{}
	}
	writeJSON(w, status, errorBody{Message: vigil.ErrorMessage(err), Error: errorInfo{Code: code, Details: details}})
}

// decode reads a JSON body into dst, refusing unknown fields, names in
// another case than the field's, names repeated in one object (checkKeys),
// trailing data, wrong media types and bodies over MaxBodyBytes.
func decode(w http.ResponseWriter, r *http.Request, dst any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !(mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "text/plain") {
			return vigil.Errorf(vigil.EUNSUPPORTED, "request body must be application/json")
		}
	}
	body, err := readBody(w, r)
	if err != nil {
		return jsonError(err)
	}
	if issue := checkKeys(body, shapeOf(reflect.TypeOf(dst))); issue != nil {
		return vigil.Invalid(*issue)
	}
	if f, ok := dst.(fastDecoder); ok && parse.ValidJSON(body) && f.decodeFast(body) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		var ve *vigil.Error
		if errors.As(err, &mbe) || errors.As(err, &ve) {
			return jsonError(err)
		}
		return vigil.InvalidField("body", "must hold a single JSON value")
	}
	return nil
}

// validator is a request body that checks itself, as a create (every
// required field present) or as an update.
type validator interface{ validate(create bool) error }

// decodeValid decodes r's body into b (decode) and validates it; on
// either failure it answers the error and returns false.
func (s *Server) decodeValid(w http.ResponseWriter, r *http.Request, b validator, create bool) bool {
	err := decode(w, r, b)
	if err == nil {
		err = b.validate(create)
	}
	if err != nil {
		s.fail(w, r, err)
		return false
	}
	return true
}

// readBody reads a request body of at most MaxBodyBytes. The buffer is
// made for the declared length, which limitBody took from the budget of
// bodies before any byte was read (a buffer grown as the body arrives
// would allocate twice the body, and hold up to three times it while it
// grows).
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, min(max(r.ContentLength, 0), MaxBodyBytes)+bytes.MinRead))
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	return buf.Bytes(), err
}

// jsonError turns a decoding error into an EINVALID naming the field, or
// ETOOLARGE.
func jsonError(err error) error {
	var ve *vigil.Error
	if errors.As(err, &ve) {
		return err // the body's reader refused: out of budget, too slow
	}
	var mbe *http.MaxBytesError
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &mbe):
		return &vigil.Error{Code: vigil.ETOOLARGE, Message: "request body exceeds 10 MiB"}
	case errors.Is(err, io.EOF):
		return vigil.InvalidField("body", "must be a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &syn):
		return vigil.InvalidField("body", "malformed JSON")
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "body"
		}
		return vigil.InvalidField(field, "must be "+jsonTypeName(typ.Type.Kind().String()))
	}
	// encoding/json reports an unknown field only as text; this is the one
	// place its message is read, to name the field back to the caller.
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if name := strings.Trim(f, `"`); name != "" {
			return vigil.InvalidField(name, "unknown field")
		}
		// An empty key cannot be named as a field.
		return vigil.InvalidField("body", `unknown field ""`)
	}
	return vigil.InvalidField("body", "malformed JSON")
}

func jsonTypeName(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64", "int32":
		return "an integer"
	case "float64":
		return "a number"
	case "slice":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	}
	return "of another type"
}

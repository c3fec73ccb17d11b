package api

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-soc/vigil"
)

// Bounds of the live stream (Config).
const (
	// DefaultEventPoll is how often a stream reads the store for new
	// events.
	DefaultEventPoll = time.Second
	// DefaultMaxOrgStreams is how many streams one org may hold open in
	// one process (more: 429).
	DefaultMaxOrgStreams = 16
	// eventKeepalive is how long a quiet stream waits before it writes a
	// comment line, so that proxies and clients see it alive.
	eventKeepalive = 15 * time.Second
	// eventWriteTimeout bounds each write: a client that stops reading is
	// dropped instead of holding the stream, whatever the server's
	// WriteTimeout (which a stream outlives).
	eventWriteTimeout = 30 * time.Second
	// eventBatch is how many events one read of the store takes.
	eventBatch = 500
)

// streamTypes are the event types the stream carries, and those
// types= may select.
var streamTypes = []string{vigil.EventCreated, vigil.EventGrew, vigil.EventMerged, vigil.EventStatusChanged,
	vigil.EventClassified, vigil.EventAssigned, vigil.EventTagged, vigil.EventCommented,
	vigil.EventCommentEdited, vigil.EventCommentDeleted, vigil.EventObservationUpdated, vigil.EventObservationDeleted,
	vigil.EventObservationMoved}

// streamEvents serves GET /v1/events: the org's incident events as
// server-sent events, each with its stream position as id, from the
// position after Last-Event-ID (header, or the last_event_id parameter for
// clients that cannot set it), else from now on; with follow=false it ends
// once it has sent what there is.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r.URL.Query())
	types := streamTypes
	if v := q.str("types"); v != "" {
		types = strings.Split(v, ",")
		for _, t := range types {
			if !slices.Contains(streamTypes, t) {
				q.bad("types", "must be a comma-separated list of "+strings.Join(streamTypes, ", "))
				break
			}
		}
	}
	last := r.Header.Get("Last-Event-ID")
	field := "Last-Event-ID"
	if last == "" {
		last, field = q.str("last_event_id"), "last_event_id"
	}
	follow := true
	switch q.str("follow") {
	case "", "true":
	case "false":
		follow = false
	default:
		q.bad("follow", "must be true or false")
	}
	var after int64
	if last != "" {
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n < 0 {
			q.bad(field, "must be the id of an event of this stream (an integer ≥ 0)")
		}
		after = n
	}
	if err := q.err(); err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	org := principal(ctx).OrgID
	if last == "" {
		head, err := s.store.IncidentEventsHead(ctx, org)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		after = head
	}
	if !s.streams.acquire(org) {
		s.fail(w, r, vigil.Errorf(vigil.ERATELIMITED,
			"your organization already has %d event streams open; close one or retry later", s.streams.max))
		return
	}
	defer s.streams.release(org)

	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	var buf bytes.Buffer
	send := func() bool {
		rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout))
		if _, err := w.Write(buf.Bytes()); err != nil {
			return false
		}
		buf.Reset()
		return rc.Flush() == nil
	}
	// Clients reconnect after retry ms, sending the last id they saw.
	buf.WriteString("retry: 2000\n: stream of org events\n\n")
	if !send() {
		return
	}
	tick := time.NewTicker(s.eventPoll)
	defer tick.Stop()
	quiet := time.Now()
	for {
		evs, err := s.store.IncidentEventsAfter(ctx, org, after, eventBatch)
		if err != nil {
			if ctx.Err() == nil {
				s.log.WarnContext(ctx, "event stream read failed; the client resumes on reconnect",
					slog.String("request_id", requestID(ctx)), slog.String("error", err.Error()))
			}
			return
		}
		for _, ev := range evs {
			after = ev.Seq
			if !slices.Contains(types, ev.Type) {
				continue
			}
			data, err := json.Marshal(ev)
			if err != nil {
				return
			}
			// JSON has no raw newline: data is one line.
			buf.WriteString("id: " + strconv.FormatInt(ev.Seq, 10) + "\nevent: " + ev.Type + "\ndata: ")
			buf.Write(data)
			buf.WriteString("\n\n")
		}
		if buf.Len() == 0 && time.Since(quiet) >= eventKeepalive {
			buf.WriteString(": keepalive\n\n")
		}
		if buf.Len() > 0 {
			if !send() {
				return
			}
			quiet = time.Now()
		}
		if len(evs) == eventBatch {
			continue // more waiting
		}
		if !follow {
			return // caught up: a script's poll ends here
		}
		select {
		case <-ctx.Done():
			return
		case <-s.stopStreams:
			return
		case <-tick.C:
		}
	}
}

// StopStreams ends every event stream, so that a graceful shutdown of the
// HTTP server (which waits for responses to finish) is not held by them:
// register it with http.Server.RegisterOnShutdown. Clients reconnect to
// another process, or to this one restarted, with their Last-Event-ID.
func (s *Server) StopStreams() { s.stopOnce.Do(func() { close(s.stopStreams) }) }

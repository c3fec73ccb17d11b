package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/vigil-soc/vigil"
	"github.com/vigil-soc/vigil/internal/queue"
)

// lane sends the deliveries of subscription id, one at a time, until ctx
// ends.
func (s *Service) lane(ctx context.Context, id string) {
	var lane *queue.WebhookLane
	for ctx.Err() == nil {
		if lane == nil {
			l, err := s.cfg.Queue.WebhookLane(ctx, id, s.cfg.AckWait, s.firstLane(id))
			if err != nil {
				s.log.Warn("webhook: lane", slog.String("webhook", id), slog.String("error", err.Error()))
				sleep(ctx, s.cfg.Refresh)
				continue
			}
			lane = l
		}
		job, err := lane.Next(s.cfg.Poll)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("webhook: lane", slog.String("webhook", id), slog.String("error", err.Error()))
				sleep(ctx, s.cfg.Poll)
			}
			lane = nil
			continue
		}
		if job != nil {
			s.deliver(ctx, job)
		}
	}
}

// deliver sends job until the receiver takes it or the retries run out,
// recording each attempt in the delivery log. The job stays held (its ack
// wait extended) between attempts, so that nothing after it on the lane
// goes out before it; when ctx ends it goes back to the queue, and the
// log's next attempt time keeps the backoff across the restart.
func (s *Service) deliver(ctx context.Context, job *queue.WebhookJob) {
	log := s.log.With(slog.String("webhook", job.Webhook), slog.String("delivery", job.Delivery))
	rec, err := s.cfg.Store.GetWebhookDelivery(ctx, job.Org, job.Delivery)
	if err != nil {
		if vigil.ErrorCode(err) != vigil.ENOTFOUND {
			log.Warn("webhook: read delivery log", slog.String("error", err.Error()))
		}
		// Not logged yet (the lane took it before the dispatcher
		// recorded it) or the log is unreachable: the attempts start
		// from what the queue says.
		rec = &vigil.WebhookDelivery{ID: job.Delivery, WebhookID: job.Webhook, EventID: job.EventID, EventType: job.EventType,
			IncidentID: job.Incident, State: vigil.DeliveryPending, CreatedAt: job.Created, UpdatedAt: job.Created}
	}
	if rec.State != vigil.DeliveryPending { // already settled by an attempt that crashed before its ack
		job.Ack()
		return
	}
	held := make(chan struct{})
	defer close(held)
	go func() {
		t := time.NewTicker(max(s.cfg.AckWait/3, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-held:
				return
			case <-t.C:
				job.InProgress()
			}
		}
	}()
	for {
		if rec.NextAttemptAt != nil {
			if !sleep(ctx, rec.NextAttemptAt.Sub(s.cfg.Now())) {
				job.Nak()
				return
			}
		}
		h := s.hook(job.Webhook)
		if h == nil { // deleted: its deliveries go with it
			job.Ack()
			return
		}
		if !h.Enabled {
			job.Nak()
			return
		}
		code, err := s.send(ctx, h, job)
		now := s.cfg.Now()
		rec.Attempts++
		rec.StatusCode, rec.UpdatedAt, rec.NextAttemptAt = code, now, nil
		switch {
		case err == nil:
			rec.State, rec.LastError = vigil.DeliveryDelivered, ""
		case ctx.Err() != nil && code == 0:
			// Cut by the shutdown, not the receiver's fault: not counted.
			job.Nak()
			return
		default:
			rec.LastError = clip(err.Error())
			if now.Sub(rec.CreatedAt) >= s.cfg.RetryFor {
				rec.State = vigil.DeliveryFailed
			} else {
				next := now.Add(s.backoff(rec.Attempts))
				rec.NextAttemptAt = &next
			}
		}
		if err := s.cfg.Store.RecordWebhookAttempt(context.WithoutCancel(ctx), job.Org, rec); err != nil {
			log.Warn("webhook: record attempt", slog.String("error", err.Error()))
		}
		if rec.State != vigil.DeliveryPending {
			if rec.State == vigil.DeliveryFailed {
				log.Warn("webhook: delivery failed for good", slog.Int("attempts", rec.Attempts), slog.String("error", rec.LastError))
			}
			if err := job.Ack(); err != nil {
				log.Warn("webhook: ack", slog.String("error", err.Error()))
			}
			return
		}
	}
}

// send makes one attempt; it returns the receiver's status code (0: no
// answer) and why the attempt failed, or nil when it answered 2xx.
func (s *Service) send(ctx context.Context, h *vigil.Webhook, job *queue.WebhookJob) (int, error) {
	ts := s.cfg.Now().Unix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(job.Payload))
	if err != nil {
		return 0, errors.New("invalid URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Vigil-Webhook/1")
	req.Header.Set(HeaderID, job.Delivery)
	req.Header.Set(HeaderEvent, job.EventType)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(h.Secret, ts, job.Payload))
	resp, err := s.client.Do(req)
	if err != nil {
		// The URL may hold a token in its query: the error says what
		// failed, not where.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		var re *refusedError
		if errors.As(err, &re) {
			return 0, re
		}
		if errors.Is(err, context.DeadlineExceeded) || (ue != nil && ue.Timeout()) {
			return 0, fmt.Errorf("no answer within %s", s.cfg.Timeout)
		}
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, s.cfg.MaxResponse))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, nil
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return resp.StatusCode, fmt.Errorf("receiver answered %d; redirects are not followed", resp.StatusCode)
	}
	return resp.StatusCode, fmt.Errorf("receiver answered %d", resp.StatusCode)
}

// backoff is the wait after the attempts-th failure: RetryBase doubled
// at each failure, at most RetryMax, less a random part of up to half
// (so that receivers coming back are not hit by every sender at once).
func (s *Service) backoff(attempts int) time.Duration {
	d := s.cfg.RetryBase
	for i := 1; i < attempts && d < s.cfg.RetryMax; i++ {
		d *= 2
	}
	d = min(d, s.cfg.RetryMax)
	return d - time.Duration(rand.Int64N(int64(d)/2+1))
}

// clip bounds an error for the log, on a rune boundary.
func clip(s string) string {
	if len(s) <= vigil.MaxDeliveryErrorLen {
		return s
	}
	s = s[:vigil.MaxDeliveryErrorLen]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// sleep waits d, or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

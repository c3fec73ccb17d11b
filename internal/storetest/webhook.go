package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vigil-soc/vigil"
)

func webhookTests() []test {
	return []test{
		{"CreateGetUpdateDelete", testWebhookCRUD},
		{"CapPerOrg", testWebhookCap},
		{"DispatchAndDeliveryLog", testWebhookDeliveries},
	}
}

func newWebhook(url string, created time.Time) *vigil.Webhook {
	return &vigil.Webhook{ID: vigil.NewID(), URL: url, EventTypes: []string{vigil.EventCreated, vigil.EventCommented},
		Enabled: true, Secret: "whsec_secret-of-" + url, Since: 7, CreatedBy: "admin@example", CreatedAt: created, UpdatedAt: created}
}

func mustCreateWebhook(t *testing.T, s Store, org string, w *vigil.Webhook) *vigil.Webhook {
	t.Helper()
	if err := s.CreateWebhook(t.Context(), org, w); err != nil {
		t.Fatalf("CreateWebhook: %v", err)
	}
	return w
}

func sameWebhook(t *testing.T, what string, g, w *vigil.Webhook) {
	t.Helper()
	if g.ID != w.ID || g.OrgID != w.OrgID || g.URL != w.URL || !slices.Equal(g.EventTypes, w.EventTypes) || g.Enabled != w.Enabled ||
		g.Secret != w.Secret || g.Since != w.Since || g.CreatedBy != w.CreatedBy || !g.CreatedAt.Equal(w.CreatedAt) || !g.UpdatedAt.Equal(w.UpdatedAt) {
		t.Errorf("%s: got %+v, want %+v", what, g, w)
	}
}

func testWebhookCRUD(t *testing.T, s Store) {
	ctx := t.Context()
	org, other := vigil.NewID(), vigil.NewID()
	w := mustCreateWebhook(t, s, org, newWebhook("https://hooks.example/a", at(0)))
	w2 := mustCreateWebhook(t, s, org, newWebhook("https://hooks.example/b", at(time.Minute)))
	w3 := mustCreateWebhook(t, s, other, newWebhook("https://hooks.example/c", at(time.Minute)))
	g, err := s.GetWebhook(ctx, org, w.ID)
	if err != nil {
		t.Fatalf("GetWebhook: %v", err)
	}
	sameWebhook(t, "GetWebhook", g, w)
	_, err = s.GetWebhook(ctx, other, w.ID)
	wantCode(t, err, vigil.ENOTFOUND, "GetWebhook of another org's subscription")
	list, total, err := s.ListWebhooks(ctx, org, vigil.Page{Limit: 10})
	if err != nil || total != 2 || len(list) != 2 || list[0].ID != w.ID || list[1].ID != w2.ID {
		t.Fatalf("ListWebhooks: %d of %d (err %v); want a then b, oldest first, not the other org's", len(list), total, err)
	}
	off := false
	url := "https://hooks.example/a2"
	g, err = s.UpdateWebhook(ctx, org, w.ID, vigil.WebhookUpdate{Enabled: &off, URL: &url}, at(time.Hour))
	if err != nil || g.Enabled || g.URL != url || !slices.Equal(g.EventTypes, w.EventTypes) || !g.UpdatedAt.Equal(at(time.Hour)) || g.Secret != w.Secret {
		t.Fatalf("UpdateWebhook(enabled=false, url): %+v (err %v)", g, err)
	}
	g, err = s.UpdateWebhook(ctx, org, w.ID, vigil.WebhookUpdate{EventTypes: []string{vigil.EventGrew}}, at(2*time.Hour))
	if err != nil || g.Enabled || g.URL != url || !slices.Equal(g.EventTypes, []string{vigil.EventGrew}) {
		t.Fatalf("UpdateWebhook(types): %+v (err %v)", g, err)
	}
	_, err = s.UpdateWebhook(ctx, other, w.ID, vigil.WebhookUpdate{Enabled: &off}, at(time.Hour))
	wantCode(t, err, vigil.ENOTFOUND, "UpdateWebhook of another org's subscription")
	wantCode(t, s.DeleteWebhook(ctx, other, w.ID), vigil.ENOTFOUND, "DeleteWebhook of another org's subscription")
	all, err := s.AllWebhooks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, a := range all {
		if a.ID == w.ID || a.ID == w2.ID || a.ID == w3.ID {
			seen = append(seen, a.ID)
			if a.Secret == "" {
				t.Errorf("AllWebhooks left the secret of %s out", a.ID)
			}
		}
	}
	if len(seen) != 3 {
		t.Errorf("AllWebhooks has %d of the 3 subscriptions", len(seen))
	}
	if err := s.DeleteWebhook(ctx, org, w.ID); err != nil {
		t.Fatalf("DeleteWebhook: %v", err)
	}
	wantCode(t, s.DeleteWebhook(ctx, org, w.ID), vigil.ENOTFOUND, "DeleteWebhook twice")
	_, err = s.GetWebhook(ctx, org, w.ID)
	wantCode(t, err, vigil.ENOTFOUND, "GetWebhook after delete")
}

func testWebhookCap(t *testing.T, s Store) {
	org := vigil.NewID()
	for i := range vigil.MaxWebhooks {
		mustCreateWebhook(t, s, org, newWebhook(fmt.Sprintf("https://hooks.example/%d", i), at(time.Duration(i))))
	}
	err := s.CreateWebhook(t.Context(), org, newWebhook("https://hooks.example/one-too-many", at(time.Hour)))
	wantCode(t, err, vigil.ECONFLICT, "CreateWebhook past MaxWebhooks")
	mustCreateWebhook(t, s, vigil.NewID(), newWebhook("https://hooks.example/another-org", at(time.Hour)))
}

func testWebhookDeliveries(t *testing.T, s Store) {
	ctx := t.Context()
	org, other := vigil.NewID(), vigil.NewID()
	w := mustCreateWebhook(t, s, org, newWebhook("https://hooks.example/a", at(0)))
	if _, ok, err := s.WebhookCursor(ctx, org); err != nil || ok {
		t.Fatalf("WebhookCursor before any dispatch: ok %v err %v; want none", ok, err)
	}
	var ds []*vigil.WebhookDelivery
	for i := range 3 {
		ds = append(ds, &vigil.WebhookDelivery{ID: vigil.DeliveryID(w.ID, int64(10+i)), WebhookID: w.ID, EventID: int64(10 + i),
			EventType: vigil.EventCreated, IncidentID: "inc", State: vigil.DeliveryPending,
			CreatedAt: at(time.Duration(i) * time.Second), UpdatedAt: at(time.Duration(i) * time.Second)})
	}
	if err := s.RecordWebhookDispatch(ctx, org, 12, ds); err != nil {
		t.Fatalf("RecordWebhookDispatch: %v", err)
	}
	// Queued again (a dispatcher restarted before it recorded): logged once,
	// and the cursor does not move back.
	if err := s.RecordWebhookDispatch(ctx, org, 11, ds[:1]); err != nil {
		t.Fatalf("RecordWebhookDispatch again: %v", err)
	}
	if pos, ok, err := s.WebhookCursor(ctx, org); err != nil || !ok || pos != 12 {
		t.Fatalf("WebhookCursor: %d %v %v, want 12", pos, ok, err)
	}
	if _, ok, _ := s.WebhookCursor(ctx, other); ok {
		t.Error("another org has a cursor")
	}
	next := at(time.Hour)
	d := *ds[0]
	d.Attempts, d.StatusCode, d.LastError, d.NextAttemptAt, d.UpdatedAt = 1, 503, "receiver answered 503", &next, at(time.Minute)
	if err := s.RecordWebhookAttempt(ctx, org, &d); err != nil {
		t.Fatalf("RecordWebhookAttempt: %v", err)
	}
	// Another org cannot write over it.
	bad := d
	bad.State = vigil.DeliveryDelivered
	if err := s.RecordWebhookAttempt(ctx, other, &bad); err != nil {
		t.Fatalf("RecordWebhookAttempt of another org: %v", err)
	}
	g, err := s.GetWebhookDelivery(ctx, org, d.ID)
	if err != nil || g.Attempts != 1 || g.StatusCode != 503 || g.LastError != d.LastError || g.NextAttemptAt == nil ||
		!g.NextAttemptAt.Equal(next) || g.State != vigil.DeliveryPending || g.EventID != 10 || !g.CreatedAt.Equal(at(0)) {
		t.Fatalf("GetWebhookDelivery after an attempt: %+v (err %v)", g, err)
	}
	_, err = s.GetWebhookDelivery(ctx, other, d.ID)
	wantCode(t, err, vigil.ENOTFOUND, "GetWebhookDelivery of another org")
	d.State, d.Attempts, d.StatusCode, d.LastError, d.NextAttemptAt, d.UpdatedAt = vigil.DeliveryDelivered, 2, 204, "", nil, at(2*time.Minute)
	if err := s.RecordWebhookAttempt(ctx, org, &d); err != nil {
		t.Fatal(err)
	}
	list, total, err := s.ListWebhookDeliveries(ctx, org, w.ID, vigil.Page{Limit: 2})
	if err != nil || total != 3 || len(list) != 2 || list[0].EventID != 12 || list[1].EventID != 11 {
		t.Fatalf("ListWebhookDeliveries: %+v of %d (err %v); want 12, 11 of 3, newest first", list, total, err)
	}
	_, _, err = s.ListWebhookDeliveries(ctx, other, w.ID, vigil.Page{Limit: 2})
	wantCode(t, err, vigil.ENOTFOUND, "ListWebhookDeliveries of another org's subscription")
	if n, err := s.PruneWebhookDeliveries(ctx, at(3*time.Minute)); err != nil || n != 1 {
		t.Fatalf("PruneWebhookDeliveries: %d (err %v), want the one delivered", n, err)
	}
	if err := s.DeleteWebhook(ctx, org, w.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.GetWebhookDelivery(ctx, org, ds[1].ID)
	wantCode(t, err, vigil.ENOTFOUND, "GetWebhookDelivery after its subscription was deleted")
	// An attempt finishing after the delete logs nothing.
	if err := s.RecordWebhookAttempt(ctx, org, ds[1]); err != nil {
		t.Fatalf("RecordWebhookAttempt after delete: %v", err)
	}
	if _, err := s.GetWebhookDelivery(ctx, org, ds[1].ID); vigil.ErrorCode(err) != vigil.ENOTFOUND {
		t.Errorf("an attempt after the delete was logged (err %v)", err)
	}
}

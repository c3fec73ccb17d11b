package console

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/vigil-soc/vigil"
)

// Roles (admin) and the org's enrichment settings.

func (c *Console) adminRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /roles", c.authed(vigil.PermAdmin, c.roles))
	mux.HandleFunc("POST /roles", c.authed(vigil.PermAdmin, c.roleCreate))
	mux.HandleFunc("POST /roles/{id}/delete", c.authed(vigil.PermAdmin, c.roleDelete))
	mux.HandleFunc("GET /settings", c.authed(vigil.PermSignalsRead, c.settings))
	mux.HandleFunc("POST /settings", c.authed(vigil.PermSignalsManage, c.settingsSave))
}

type rolesView struct {
	Roles   []*vigil.Role
	Catalog []string
	Name    string
	Checked map[string]bool
}

func (c *Console) roles(w http.ResponseWriter, r *http.Request, s *session) {
	c.showRoles(w, r, s, http.StatusOK, rolesView{}, nil)
}

func (c *Console) showRoles(w http.ResponseWriter, r *http.Request, s *session, status int, v rolesView, formErr error) {
	var list struct {
		Roles []*vigil.Role `json:"roles"`
	}
	if _, err := c.call(r, s.token, "GET", "/v1/roles", url.Values{"limit": {"1000"}}, nil, &list); err != nil {
		c.apiFailed(w, r, s, err)
		return
	}
	v.Roles, v.Catalog = list.Roles, vigil.Catalog
	c.render(w, r, status, "roles", page{Title: "Roles", Nav: "roles", Err: formErr, Data: v})
}

func (c *Console) roleCreate(w http.ResponseWriter, r *http.Request, s *session) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		c.renderError(w, r, s, http.StatusBadRequest, "The form could not be read: "+err.Error())
		return
	}
	perms := r.PostForm["permission"]
	if perms == nil {
		perms = []string{}
	}
	name := r.PostForm.Get("name")
	if _, err := c.call(r, s.token, "POST", "/v1/roles", nil, map[string]any{"name": name, "permissions": perms}, nil); err != nil {
		if c.expired(w, r, err) {
			return
		}
		checked := map[string]bool{}
		for _, p := range perms {
			checked[p] = true
		}
		status := http.StatusBadRequest
		if ae, ok := err.(*apiError); ok {
			status = ae.Status
		}
		c.showRoles(w, r, s, status, rolesView{Name: name, Checked: checked}, err)
		return
	}
	http.Redirect(w, r, "/roles", http.StatusSeeOther)
}

func (c *Console) roleDelete(w http.ResponseWriter, r *http.Request, s *session) {
	if _, err := c.call(r, s.token, "DELETE", "/v1/roles/"+url.PathEscape(r.PathValue("id")), nil, nil, nil); err != nil {
		c.apiFailed(w, r, s, err)
		return
	}
	http.Redirect(w, r, "/roles", http.StatusSeeOther)
}

type settingsView struct {
	Set   vigil.EnrichmentSettings
	Saved bool
}

func (c *Console) settings(w http.ResponseWriter, r *http.Request, s *session) {
	var v settingsView
	if _, err := c.call(r, s.token, "GET", "/v1/enrichment-settings", nil, nil, &v.Set); err != nil {
		c.apiFailed(w, r, s, err)
		return
	}
	v.Saved = r.URL.Query().Has("saved")
	c.render(w, r, http.StatusOK, "settings", page{Title: "Enrichment settings", Nav: "settings", Data: v})
}

// settingsSave sends the whole form as one partial PUT: the API checks
// each field and names the bad ones.
func (c *Console) settingsSave(w http.ResponseWriter, r *http.Request, s *session) {
	r.Body = http.MaxBytesReader(w, r.Body, 256<<10)
	if err := r.ParseForm(); err != nil {
		c.renderError(w, r, s, http.StatusBadRequest, "The form could not be read: "+err.Error())
		return
	}
	pf := r.PostForm
	body := map[string]any{}
	for _, k := range []string{"geoip_enabled", "dns_enabled", "whois_enabled", "threat_intel_enabled", "suricata_engine_events"} {
		body[k] = pf.Get(k) != ""
	}
	var local []fieldIssue
	for _, k := range []string{"rate_limit", "cache_ttl_hours", "rollup_threshold", "rollup_window_minutes", "risk_threshold", "risk_detections"} {
		n, err := strconv.Atoi(strings.TrimSpace(pf.Get(k)))
		if err != nil {
			local = append(local, fieldIssue{Field: k, Issue: "must be a whole number"})
			continue
		}
		body[k] = n
	}
	nets := strings.FieldsFunc(pf.Get("internal_networks"), func(r rune) bool { return r == '\n' || r == ',' || r == ' ' || r == '\r' })
	body["internal_networks"] = append([]string{}, nets...)
	sevs := []string{}
	for _, sev := range pf["rollup_severities"] {
		if vigil.ValidSeverity(sev) && !slices.Contains(sevs, sev) {
			sevs = append(sevs, sev)
		}
	}
	body["rollup_severities"] = sevs
	var err error
	if len(local) > 0 {
		err = &apiError{Status: http.StatusBadRequest, Message: "The settings have invalid fields", Details: local}
	} else {
		_, err = c.call(r, s.token, "PUT", "/v1/enrichment-settings", nil, body, nil)
	}
	if err != nil {
		if c.expired(w, r, err) {
			return
		}
		// The form again as typed, so that the named field can be fixed.
		v := settingsView{Set: vigil.EnrichmentSettings{
			GeoIPEnabled: body["geoip_enabled"] == true, DNSEnabled: body["dns_enabled"] == true,
			WhoisEnabled: body["whois_enabled"] == true, ThreatIntelEnabled: body["threat_intel_enabled"] == true,
			SuricataEngineEvents: body["suricata_engine_events"] == true, InternalNetworks: nets,
		}}
		v.Set.RateLimit, _ = strconv.Atoi(strings.TrimSpace(pf.Get("rate_limit")))
		v.Set.CacheTTLHours, _ = strconv.Atoi(strings.TrimSpace(pf.Get("cache_ttl_hours")))
		v.Set.RollupThreshold, _ = strconv.Atoi(strings.TrimSpace(pf.Get("rollup_threshold")))
		v.Set.RollupWindowMinutes, _ = strconv.Atoi(strings.TrimSpace(pf.Get("rollup_window_minutes")))
		v.Set.RiskThreshold, _ = strconv.Atoi(strings.TrimSpace(pf.Get("risk_threshold")))
		v.Set.RiskDetections, _ = strconv.Atoi(strings.TrimSpace(pf.Get("risk_detections")))
		v.Set.RollupSeverities = sevs
		status := http.StatusBadRequest
		if ae, ok := err.(*apiError); ok {
			status = ae.Status
		}
		c.render(w, r, status, "settings", page{Title: "Enrichment settings", Nav: "settings", Err: err, Data: v})
		return
	}
	http.Redirect(w, r, "/settings?saved=1", http.StatusSeeOther)
}

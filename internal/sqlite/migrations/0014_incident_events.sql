-- The history of each incident: one row per change, written in the
-- transaction that made it. The id orders them; with a single writer it
-- is also the order of commits, so the live stream resumes after an id.
CREATE TABLE incident_events (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id         TEXT NOT NULL,
    incident_id    TEXT NOT NULL REFERENCES incidents (id),
    type           TEXT NOT NULL,
    actor          TEXT NOT NULL,
    via            TEXT NOT NULL DEFAULT '',
    at             INTEGER NOT NULL,
    artifact_count INTEGER NOT NULL,
    detail         TEXT NOT NULL
);
CREATE INDEX incident_events_incident ON incident_events (incident_id, id);
CREATE INDEX incident_events_org ON incident_events (org_id, id);

-- The status changes recorded before become the first events.
INSERT INTO incident_events (org_id, incident_id, type, actor, at, artifact_count, detail)
SELECT i.org_id, h.incident_id, 'incident.status_changed', h.actor, h.at, i.artifact_count,
    json_object('from_status', h.from_status, 'to_status', h.to_status, 'classification',
        CASE h.to_status WHEN 3 THEN 'true_positive' WHEN 5 THEN 'true_positive' WHEN 4 THEN 'false_positive' END)
FROM incident_history h JOIN incidents i ON i.id = h.incident_id
ORDER BY h.at, h.incident_id, h.seq;
DROP TABLE incident_history;

-- The history of each incident: one row per change, written in the
-- transaction that made it. The id orders the events of one incident
-- (every change locks its incident first). Ids are taken before commit,
-- so they are not the order in which events become visible: pos is, set
-- after commit by one sequencer at a time (IncidentEventsAfter), and the
-- live stream resumes after a pos.
CREATE TABLE incident_events (
    id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    pos            BIGINT,
    org_id         TEXT COLLATE "C" NOT NULL,
    incident_id    TEXT COLLATE "C" NOT NULL REFERENCES incidents (id),
    type           TEXT COLLATE "C" NOT NULL,
    actor          TEXT COLLATE "C" NOT NULL,
    via            TEXT COLLATE "C" NOT NULL DEFAULT '',
    at             BIGINT NOT NULL,
    artifact_count INTEGER NOT NULL,
    detail         JSONB NOT NULL
);
CREATE INDEX incident_events_incident ON incident_events (incident_id, id);
CREATE UNIQUE INDEX incident_events_pos ON incident_events (pos);
CREATE INDEX incident_events_org_pos ON incident_events (org_id, pos);
CREATE INDEX incident_events_unsequenced ON incident_events (id) WHERE pos IS NULL;

-- The status changes recorded before become the first events.
INSERT INTO incident_events (org_id, incident_id, type, actor, at, artifact_count, detail)
SELECT i.org_id, h.incident_id, 'incident.status_changed', h.actor, h.at, i.artifact_count,
    jsonb_strip_nulls(jsonb_build_object('from_status', h.from_status, 'to_status', h.to_status, 'classification',
        CASE h.to_status WHEN 3 THEN 'true_positive' WHEN 5 THEN 'true_positive' WHEN 4 THEN 'false_positive' END))
FROM incident_history h JOIN incidents i ON i.id = h.incident_id
ORDER BY h.at, h.incident_id, h.seq;
DROP TABLE incident_history;

-- Case work: who works an incident, its tags (a JSON array, sorted) and
-- the analysts' comments on it.
ALTER TABLE incidents ADD COLUMN assignee TEXT;
ALTER TABLE incidents ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';
CREATE INDEX incidents_org_assignee ON incidents (org_id, assignee) WHERE assignee IS NOT NULL;

CREATE TABLE incident_comments (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL,
    incident_id TEXT NOT NULL REFERENCES incidents (id),
    author      TEXT NOT NULL,
    body        TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX incident_comments_incident ON incident_comments (incident_id, created_at, id);

-- Case work: who works an incident, its tags (sorted) and the analysts'
-- comments on it.
ALTER TABLE incidents ADD COLUMN assignee TEXT COLLATE "C";
ALTER TABLE incidents ADD COLUMN tags TEXT[] COLLATE "C" NOT NULL DEFAULT '{}';
CREATE INDEX incidents_org_assignee ON incidents (org_id, assignee) WHERE assignee IS NOT NULL;
CREATE INDEX incidents_tags ON incidents USING gin (tags);

CREATE TABLE incident_comments (
    id          TEXT COLLATE "C" PRIMARY KEY,
    org_id      TEXT COLLATE "C" NOT NULL,
    incident_id TEXT COLLATE "C" NOT NULL REFERENCES incidents (id),
    author      TEXT COLLATE "C" NOT NULL,
    body        TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE INDEX incident_comments_incident ON incident_comments (incident_id, created_at, id);

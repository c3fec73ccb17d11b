-- Roll-ups and entity risk (docs/detections.md, "Roll-ups and entity risk").

-- A roll-up: the incident that gathers one detection's findings for many
-- sources within a window. title is the incident's title, kept here so
-- that every refresh of the incident keeps it ("… from 4,812 sources").
CREATE TABLE rollups (
    incident_id  TEXT COLLATE "C" PRIMARY KEY REFERENCES incidents (id),
    org_id       TEXT COLLATE "C" NOT NULL,
    detection    TEXT COLLATE "C" NOT NULL,
    detector     TEXT COLLATE "C" NOT NULL,
    name         TEXT NOT NULL,
    window_start BIGINT NOT NULL,
    window_end   BIGINT NOT NULL,
    sources      BIGINT NOT NULL,
    count        BIGINT NOT NULL,
    title        TEXT NOT NULL
);
CREATE INDEX rollups_detection ON rollups (org_id, detection, window_end);

-- The sources of a roll-up with their counts, listed heaviest first.
CREATE TABLE rollup_sources (
    incident_id TEXT COLLATE "C" NOT NULL REFERENCES incidents (id),
    node_id     TEXT COLLATE "C" NOT NULL REFERENCES nodes (id),
    count       BIGINT NOT NULL,
    first_at    BIGINT NOT NULL,
    last_at     BIGINT NOT NULL,
    PRIMARY KEY (incident_id, node_id)
);
CREATE INDEX rollup_sources_heaviest ON rollup_sources (incident_id, count DESC, node_id);
CREATE INDEX rollup_sources_node ON rollup_sources (node_id);

-- Entity risk: what each observation added to each of its key nodes, and
-- under which detection. It tells a node's risk within 24 hours, and for
-- how many distinct sources a detection fired within a roll-up's window
-- (at most a week); the prune every ten minutes scans it for what is
-- older (an index on at alone cost every finding a write).
CREATE TABLE entity_risk (
    org_id         TEXT COLLATE "C" NOT NULL,
    observation_id TEXT COLLATE "C" NOT NULL,
    node_id        TEXT COLLATE "C" NOT NULL,
    detection      TEXT COLLATE "C" NOT NULL,
    points         BIGINT NOT NULL,
    at             BIGINT NOT NULL,
    PRIMARY KEY (org_id, observation_id, node_id)
);
CREATE INDEX entity_risk_node ON entity_risk (org_id, node_id, at);
CREATE INDEX entity_risk_detection ON entity_risk (org_id, detection, at, node_id);

-- The observations a node is a key of: an entity leaving a roll-up takes
-- its observations with it.
CREATE INDEX observation_nodes_node ON observation_nodes (node_id) WHERE key;

-- An incident's observations in time order: the single-incident response
-- lists the first vigil.MaxIncidentRefs of a roll-up's million, and a
-- roll-up names the context nodes of its newest.
CREATE INDEX observations_incident_created ON observations (incident_id, created_at, id);

-- Why an incident stands apart from a roll-up (vigil.RaisedBy, JSON).
ALTER TABLE incidents ADD COLUMN raised_by TEXT;

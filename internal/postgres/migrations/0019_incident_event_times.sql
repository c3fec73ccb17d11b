-- When what an incident is about happened, beside when Vigil saw it: the
-- earliest and latest event times of its observations (an observation's
-- event times are its artifacts' timestamps or, when it names no
-- artifact, its creation time). Kept up to date as observations join and
-- grow (correlation), never computed on a read; NULL when the incident
-- has no observation (all deleted, or merged into another). Existing
-- incidents are filled here, once, from what they hold now.
ALTER TABLE incidents ADD COLUMN first_event_at BIGINT, ADD COLUMN last_event_at BIGINT;
UPDATE incidents i SET (first_event_at, last_event_at) = (
    SELECT MIN(t), MAX(t) FROM (
        SELECT k.ts AS t FROM incident_artifacts x JOIN artifact_ids k ON k.id = x.artifact_id
        WHERE x.incident_id = i.id AND k.org_id = i.org_id
        UNION ALL
        SELECT o.created_at FROM observations o
        WHERE o.incident_id = i.id AND o.org_id = i.org_id
        AND NOT EXISTS (SELECT 1 FROM observation_artifacts y WHERE y.observation_id = o.id)) e);
-- The queue sorted by either, most recent first (an incident without
-- event times last), a page without sorting all of an org's incidents;
-- the same indexes serve the filters on them.
CREATE INDEX IF NOT EXISTS incidents_org_first_event ON incidents (org_id, first_event_at DESC NULLS LAST, id DESC);
CREATE INDEX IF NOT EXISTS incidents_org_last_event ON incidents (org_id, last_event_at DESC NULLS LAST, id DESC);

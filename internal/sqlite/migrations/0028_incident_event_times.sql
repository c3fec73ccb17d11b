-- When what an incident is about happened, beside when Vigil saw it: the
-- earliest and latest event times of its observations (an observation's
-- event times are its artifacts' timestamps or, when it names no
-- artifact, its creation time). Kept up to date as observations join and
-- grow (correlation), never computed on a read; NULL when the incident
-- has no observation (all deleted, or merged into another). Existing
-- incidents are filled here, once, from what they hold now.
ALTER TABLE incidents ADD COLUMN first_event_at INTEGER;
ALTER TABLE incidents ADD COLUMN last_event_at INTEGER;
UPDATE incidents SET (first_event_at, last_event_at) = (
    SELECT MIN(t), MAX(t) FROM (
        SELECT a.ts AS t FROM incident_artifacts x JOIN artifacts a ON a.id = x.artifact_id
        WHERE x.incident_id = incidents.id AND a.org_id = incidents.org_id
        UNION ALL
        SELECT o.created_at FROM observations o
        WHERE o.incident_id = incidents.id AND o.org_id = incidents.org_id
        AND NOT EXISTS (SELECT 1 FROM observation_artifacts y WHERE y.observation_id = o.id)));
-- The queue sorted by either, most recent first, a page without sorting
-- all of an org's incidents; the same indexes serve the filters on them.
CREATE INDEX IF NOT EXISTS incidents_org_first_event ON incidents (org_id, first_event_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS incidents_org_last_event ON incidents (org_id, last_event_at DESC, id DESC);

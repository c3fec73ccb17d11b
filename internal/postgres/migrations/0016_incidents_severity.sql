-- The incident queue sorted by severity (critical first, then most
-- recently active): a page of 50 without ranking all of an org's
-- incidents. The expression is vigil.IncidentOrderSQL's, character for
-- character, so the planner matches it.
CREATE INDEX IF NOT EXISTS incidents_org_severity ON incidents (org_id,
    (CASE severity WHEN 'critical' THEN 4 WHEN 'high' THEN 3 WHEN 'medium' THEN 2 WHEN 'low' THEN 1 ELSE 0 END) DESC,
    last_activity_at DESC, id DESC);

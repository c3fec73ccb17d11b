-- The console's incident queue, most recently active first: a page of 50
-- without sorting all of an org's incidents.
CREATE INDEX IF NOT EXISTS incidents_org_activity ON incidents (org_id, last_activity_at DESC, id DESC);

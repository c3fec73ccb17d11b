-- Merged incidents leave the queue: lists and counts by status keep the
-- incidents that were not merged (merged_into IS NULL). With merged_into
-- in the index, a count per status still reads the index alone. The
-- correlation no longer uses this index (it starts from the key nodes).
DROP INDEX incidents_org_open;
CREATE INDEX incidents_org_open ON incidents (org_id, status, merged_into, last_activity_at);

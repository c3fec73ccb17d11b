-- Orgs whose open incidents await re-classification because their rules
-- changed: written by the rule write's transaction, worked off in the
-- background in steps (Store.ClaimReclassify / ReleaseReclassify).
-- generation counts the writes that asked; cursor is the id of the last
-- incident classified in this pass; queued_at is the place in line;
-- claimed_until the end of a process's claim.
CREATE TABLE reclassify (
    org_id        TEXT PRIMARY KEY,
    generation    INTEGER NOT NULL,
    cursor        TEXT NOT NULL DEFAULT '',
    queued_at     INTEGER NOT NULL,
    claimed_until INTEGER
) WITHOUT ROWID;

-- A signal counts what its line records (docs/detections.md, "Counting"):
-- weight is the attempts (look-ups, packets) it adds to its window's
-- count, 0 for a line kept only as evidence; unit names the event the line
-- records when several lines may record the same one (the first signal
-- of a unit counts, the others are recorded with weight 0). Signals
-- recorded before count 1 each, as they did.
ALTER TABLE detect_signals ADD COLUMN weight INTEGER NOT NULL DEFAULT 1;
ALTER TABLE detect_signals ADD COLUMN unit TEXT COLLATE "C";
CREATE INDEX detect_signals_unit ON detect_signals (org_id, detector, key, unit) WHERE unit IS NOT NULL;
-- The window queries read (at, member, weight): the covering index takes
-- the weight too.
DROP INDEX detect_signals_window;
CREATE INDEX detect_signals_window ON detect_signals (org_id, detector, key, at) INCLUDE (member, weight);

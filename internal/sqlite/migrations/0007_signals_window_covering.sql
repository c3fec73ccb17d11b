-- The window queries read (at, member) of a key's newest signals: with
-- member in the index they never touch the table.
DROP INDEX detect_signals_window;
CREATE INDEX detect_signals_window ON detect_signals (org_id, detector, key, at, member);

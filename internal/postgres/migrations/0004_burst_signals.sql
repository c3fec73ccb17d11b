-- A burst's running signal count, so that a growing burst is described
-- without rescanning its signals.
ALTER TABLE detect_bursts ADD COLUMN signals BIGINT NOT NULL DEFAULT 0;

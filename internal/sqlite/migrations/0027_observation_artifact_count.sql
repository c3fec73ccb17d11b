-- How many artifacts an observation lists, kept with it: a growing burst
-- adds to its observation at every batch until it lists
-- vigil.MaxObservationArtifacts, and counting its rows each time read up to
-- 5,000 of them. NULL (an observation of an older build) is counted once,
-- when it next grows.
ALTER TABLE observations ADD COLUMN artifact_count INTEGER;

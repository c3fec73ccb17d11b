-- Claims of artifact ids by write, not by id (internal/vlogs). A write
-- (one InsertArtifacts call) holds one row here while it runs; each id it
-- claims names it in artifact_ids.writer. Finishing the write deletes
-- its one row, so storing a batch of n artifacts writes n id rows and one
-- write row, where 0023 updated every id row a second time to release it.
-- An id is stored when its writer has no row here (or writer is NULL), is
-- being written while the row's lease runs, and is in doubt (its writer
-- may have died after VictoriaLogs took it) once the lease has expired.
CREATE TABLE artifact_writes (
    token       BIGINT PRIMARY KEY,
    lease_until BIGINT NOT NULL
);

-- Claims still held at the upgrade become writes whose lease has ended:
-- whoever takes them over looks them up in VictoriaLogs first.
INSERT INTO artifact_writes (token, lease_until)
    SELECT DISTINCT writer, 0 FROM artifact_ids WHERE writer IS NOT NULL AND lease_until IS NOT NULL;
UPDATE artifact_ids SET writer = NULL WHERE writer IS NOT NULL AND lease_until IS NULL;
ALTER TABLE artifact_ids DROP COLUMN lease_until;
-- Id rows are no longer updated on release: no room to keep for it.
ALTER TABLE artifact_ids RESET (fillfactor);

-- Entries now carry their address keys (field a, internal/vlogs entry.go),
-- so that an address term is one word of one field. Entries written before
-- lack them: every one of them is stamped before address_keys_from, the
-- newest stamp of an artifact stored so far (0 in a deployment that had
-- stored none), and address terms match those by their phrase.
ALTER TABLE artifact_account ADD COLUMN address_keys_from BIGINT NOT NULL DEFAULT 0;
UPDATE artifact_account SET address_keys_from = COALESCE((SELECT GREATEST(MAX(ts) + 1, 1) FROM artifact_ids), 0);

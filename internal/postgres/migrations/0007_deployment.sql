-- The identity of this database: one row, whose id is generated on first
-- use (Store.DeploymentID) and never changes. What a deployment may share
-- with others, the queue on a common NATS server, records it to know
-- whose it is.
CREATE TABLE deployment (
    singleton  SMALLINT PRIMARY KEY CHECK (singleton = 1),
    id         TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

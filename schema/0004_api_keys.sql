-- API keys for `stockledger serve`. Only a SHA-256 hash of each key is kept;
-- the key itself is shown once, when it is created.
CREATE TABLE api_keys (
    id         uuid        PRIMARY KEY,
    name       text        NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 64),
    role       text        NOT NULL CHECK (role IN ('writer', 'reader', 'auditor', 'admin')),
    key_hash   text        NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);

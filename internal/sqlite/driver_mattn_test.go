//go:build sqlite_fts5

package sqlite

import _ "github.com/mattn/go-sqlite3" // registers "sqlite3", with FTS5 under this build tag

func init() { benchDrivers["mattn"] = "sqlite3" }

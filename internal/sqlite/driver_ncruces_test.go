//go:build ncruces

package sqlite

import (
	"github.com/ncruces/go-sqlite3"
	_ "github.com/ncruces/go-sqlite3/driver" // registers "sqlite3": SQLite compiled to WebAssembly and translated to Go, no cgo
	"github.com/ncruces/go-sqlite3/ext/fts5"
)

func init() {
	sqlite3.AutoExtension(fts5.Register)
	benchDrivers["ncruces"] = "sqlite3"
}

package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// wtx is a write transaction that prepares each distinct statement once:
// detection runs the same few statements for every signal of a batch, and
// preparing them each time cost ≈ 5 % of the writer's time. Statements
// the writer has run before are not prepared at all: the transaction uses
// those of the store's stmtCache, prepared once on the writer's
// connection.
type wtx struct {
	*sql.Tx
	stmts  map[string]*sql.Stmt
	shared *stmtCache // nil: each statement prepared in the transaction
	// fresh are the statements prepared in the transaction, for the
	// shared cache once it ends.
	fresh  []string
	cached []signalKey // the newestCache entries it read or changed
	// grown are the observations whose grownNodes entries it changed.
	grown []string
	// nodes are the ids of the nodes the transaction looked up or
	// created (upsertNodes): a batch's findings name the same few (the
	// sensor every alert is against) again and again.
	nodes map[nodeRef]cachedNode
}

// nodeRef names a node of an org.
type nodeRef struct{ org, typ, value string }

// cachedNode is the node a nodeRef names: its id and value (another
// than the ref's for a name joined to an account, JoinAccounts).
type cachedNode struct{ id, value string }

// stmtHook, when a test sets it, is called with the text of every
// statement a write transaction runs through it (before any transaction
// begins: it is read without a lock).
var stmtHook func(q string)

// stmt returns q prepared in the transaction (closed when it ends).
func (t *wtx) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if stmtHook != nil {
		stmtHook(q)
	}
	if st, ok := t.stmts[q]; ok {
		return st, nil
	}
	var st *sql.Stmt
	if shared := t.shared.get(q); shared != nil {
		// The writer's one connection: database/sql finds the statement
		// prepared there and binds it to the transaction, preparing
		// nothing.
		st = t.Tx.StmtContext(ctx, shared)
	} else {
		var err error
		if st, err = t.Tx.PrepareContext(ctx, q); err != nil {
			return nil, err
		}
		if t.shared != nil {
			t.fresh = append(t.fresh, q)
		}
	}
	if t.stmts == nil {
		t.stmts = map[string]*sql.Stmt{}
	}
	t.stmts[q] = st
	return st, nil
}

// uninterrupted returns ctx without its cancellation, or ctx's error if
// it has ended. The writer's statements run so: with a context that can
// end, the driver (modernc) starts a goroutine per statement to interrupt
// it, and database/sql one per result set to close it — some 2,500 a
// 1000-artifact batch. A statement is short; a transaction whose context
// ends stops at its next statement instead, and is rolled back.
func uninterrupted(ctx context.Context) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}

// stmtCache holds statements prepared on the writer's connection, by
// their text, for every later transaction: a batch's detection runs some
// fifty distinct statements, and preparing them in each transaction took
// ≈ 2 ms of each 1000-artifact batch on the edge mix. It keeps at most
// maxStmts (statements whose text varies, such as an IN list of n
// placeholders, would otherwise grow it without end); one it does not
// keep is prepared in each transaction as before.
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

const maxStmts = 256

// get returns the statement of text q, or nil if it is not prepared.
func (c *stmtCache) get(q string) *sql.Stmt {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[q]
}

// prepare prepares the statements qs on db, the writer, while no
// transaction holds its connection, as many as the cache has room for. A
// statement that fails to prepare is left out: the next transaction
// prepares it in itself and meets the error there.
func (c *stmtCache) prepare(ctx context.Context, db *sql.DB, qs []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range qs {
		if len(c.m) >= maxStmts {
			return
		}
		if _, ok := c.m[q]; ok {
			continue
		}
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			continue
		}
		if c.m == nil {
			c.m = map[string]*sql.Stmt{}
		}
		c.m[q] = st
	}
}

// close closes the statements.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = nil
}

// ExecContext runs q through the transaction's prepared statements.
func (t *wtx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	ctx, err := uninterrupted(ctx)
	if err != nil {
		return nil, err
	}
	st, err := t.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// QueryContext runs q through the transaction's prepared statements.
func (t *wtx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	ctx, err := uninterrupted(ctx)
	if err != nil {
		return nil, err
	}
	st, err := t.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowContext runs q through the transaction's prepared statements.
func (t *wtx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if ctx.Err() != nil {
		return t.Tx.QueryRowContext(ctx, q, args...) // a Row carrying the error
	}
	ctx = context.WithoutCancel(ctx)
	st, err := t.stmt(ctx, q)
	if err != nil {
		// A Row carrying the error: the statement runs unprepared and
		// fails again in Scan, where callers look for errors.
		return t.Tx.QueryRowContext(ctx, q, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

package main

import (
	"context"
	"errors"
	"strings"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
)

// client returns a library client on the global flags' table.
func (e *env) client(ctx context.Context) (*asyncevent.Client, error) {
	db, err := e.DynamoDB(ctx)
	if err != nil {
		return nil, err
	}
	opts, err := e.Options()
	if err != nil {
		return nil, err
	}
	c, err := asyncevent.New(db, opts)
	if errors.Is(err, asyncevent.ErrInvalidOptions) && strings.Contains(err.Error(), "table name") {
		return nil, clikit.Usagef("-table %q: want 3 to 255 of a-z A-Z 0-9 _ . -", e.Table)
	}
	if err == nil {
		e.clients = append(e.clients, c)
	}
	return c, err
}

// unsealedNote is what the CLI says of a lottery created without a seed source.
const unsealedNote = "seed UNSEALED: stored on the DRAW item, so anyone who can read the table can read it before the draw; for a real draw set " + clikit.EnvDrawSecret

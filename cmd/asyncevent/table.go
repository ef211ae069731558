package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
)

func tableCreateCmd() *command {
	return &command{
		name:    "table create",
		summary: "create the table (PK/SK, GSI1, GSI2, TTL on ttl), or accept it if it exists and matches",
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, args []string) error {
			if err := clikit.WantArgs(args, 0, ""); err != nil {
				return err
			}
			c, err := e.client(ctx)
			if err != nil {
				return err
			}
			if err := c.CreateTable(ctx); err != nil {
				return err
			}
			if e.JSON {
				return e.PrintJSON(clikit.TableCheck{Table: c.TableName(), OK: true})
			}
			_, err = fmt.Fprintf(e.Stdout, "table %s is ready: PK/SK, GSI1 (GSI1PK/GSI1SK), GSI2 (GSI2PK/GSI2SK), TTL on ttl\n", c.TableName())
			return err
		},
	}
}

// errCheckFailed reports a check that found problems, already printed: exit 1.
var errCheckFailed = errors.New("check failed")

func tableCheckCmd() *command {
	return &command{
		name:    "table check",
		summary: "compare the table with the design (keys, GSI1, GSI2) and name every difference",
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, args []string) error {
			if err := clikit.WantArgs(args, 0, ""); err != nil {
				return err
			}
			c, err := e.client(ctx)
			if err != nil {
				return err
			}
			res := clikit.TableCheck{Table: c.TableName(), OK: true}
			err = c.CheckTable(ctx)
			var mismatch *asyncevent.TableMismatchError
			switch {
			case errors.As(err, &mismatch):
				res.OK, res.Problems = false, mismatch.Problems
			case errors.Is(err, asyncevent.ErrTableNotFound) && !e.JSON:
				return err // said with the command that creates it
			case errors.Is(err, asyncevent.ErrTableNotFound):
				res.OK, res.Problems = false, []string{"table not found"}
			case err != nil:
				return err
			}
			if e.JSON {
				if err := e.PrintJSON(res); err != nil {
					return err
				}
			} else if res.OK {
				fmt.Fprintf(e.Stdout, "table %s matches the design\n", res.Table)
			} else {
				fmt.Fprintf(e.Stdout, "table %s does not match the design:\n", res.Table)
				for _, p := range res.Problems {
					fmt.Fprintf(e.Stdout, "  - %s\n", p)
				}
			}
			if !res.OK {
				return errCheckFailed
			}
			return nil
		},
	}
}

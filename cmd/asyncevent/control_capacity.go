package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
)

// The operator's controls of a FIRST_COME event's seats: add seats while it runs, and
// cancel a seat won (a refund, a fraud), which goes back to the event's pool. Each is
// a control like close or pause: it names its actor, the event's audit trail records
// it, and one its state refuses changes no seat, prints why and exits 1 (under
// -idempotency-key the refusal is recorded on the key, so a run again under it is
// refused alike). The workers
// learn of the seats at once, from the capacity shards, not from their copy of the
// config, so these print no EventCacheTTL. Each takes -idempotency-key: run again
// under the key of a run whose answer was lost, it applies nothing twice and says
// the control was applied before; a run refused under a key is recorded under it
// (so that the lost run's write cannot apply later), and a run again under that key
// prints the same refusal.

// checkKey checks an -idempotency-key as every ID flag is checked: one message, exit 2.
func checkKey(key string) error {
	if key == "" {
		return nil
	}
	return checkID("-idempotency-key", key)
}

// idempotencyKeyFlag is the -idempotency-key flag of the controls of seats.
func idempotencyKeyFlag(fs *flag.FlagSet, key *string) {
	fs.StringVar(key, "idempotency-key", "", "run under `KEY` (a UUID, say): a run again under the same key after one whose answer was lost "+
		"applies nothing twice and says it was applied before, or prints the refusal recorded under the key (a new run then takes a new key) "+
		"(default: a key of the run's own, which its error names when it never learned the outcome)")
}

// replayedNote is what an applied control's line adds when the control had been
// applied before under its idempotency key.
func replayedNote(u asyncevent.EventUpdate) string {
	if !u.Replayed {
		return ""
	}
	return " (applied before under this idempotency key: nothing written again)"
}

func eventAddCapacityCmd() *command {
	var (
		actor, key string
		seats      int64
		shard      int
	)
	return &command{
		name: "event add-capacity",
		args: "EVENT_ID -actor NAME -seats N",
		summary: "add N seats to a running FIRST_COME event: onto the shards that still hold seats (or -shard K), " +
			"once every shard is empty onto its pool, which the next requests claim; else not applied, exit 1",
		flags: func(fs *flag.FlagSet) {
			actorFlag(fs, &actor)
			fs.Int64Var(&seats, "seats", 0, fmt.Sprintf("the number of seats `N` to add (required, 1 to %s)", clikit.FormatInt(asyncevent.MaxAddSeats)))
			fs.IntVar(&shard, "shard", 0, "put the seats on capacity shard `K` (0 to the event's capacityShards − 1) while it holds seats, "+
				"else on the pool (default: spread over the shards that hold seats)")
			idempotencyKeyFlag(fs, &key)
		},
		run: func(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
			toShard, err := addCapacityFlags(fs, args, actor, seats, shard)
			if err != nil {
				return err
			}
			if err := checkKey(key); err != nil {
				return err
			}
			c, err := e.client(ctx)
			if err != nil {
				return err
			}
			if toShard >= 0 {
				if err := checkShard(ctx, c, args[0], toShard); err != nil {
					return err
				}
			}
			in := asyncevent.AddCapacityInput{Seats: seats, Actor: actor, IdempotencyKey: key}
			if toShard >= 0 {
				in.Shard = &toShard
			}
			u, err := c.AddCapacity(ctx, args[0], in)
			out, err := controlOutcome(args[0], asyncevent.ActionAddCapacity, u, err)
			if err != nil {
				return err
			}
			if e.JSON {
				out.Config = e.storedEventJSON(ctx, u.Event)
			}
			var capacity *asyncevent.EventCapacity
			if u.Applied {
				if capacity, err = c.GetCapacity(ctx, args[0]); err != nil {
					return err
				}
				out.Capacity = e.capacityJSON(ctx, capacity)
			}
			return e.reportControl(out, func() string { return seatsAdded(u.Event, capacity, seats) + replayedNote(u) },
				fmt.Errorf("%s was not given seats: it is %s", args[0], out.State))
		},
	}
}

// addCapacityFlags checks the command line of event add-capacity before anything is
// read, and returns the shard to give the library: -1 when -shard is not given.
func addCapacityFlags(fs *flag.FlagSet, args []string, actor string, seats int64, shard int) (int, error) {
	if err := controlArgs(args, "EVENT_ID", actor); err != nil {
		return 0, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case !set["seats"]:
		return 0, clikit.Usagef("missing -seats N: the number of seats to add")
	case seats < 1 || seats > asyncevent.MaxAddSeats:
		return 0, clikit.Usagef("-seats %d: want 1 to %s", seats, clikit.FormatInt(asyncevent.MaxAddSeats))
	case !set["shard"]:
		return -1, nil
	case shard < 0:
		return 0, clikit.Usagef("-shard %d: want a capacity shard, 0 or more (leave -shard out to spread the seats)", shard)
	}
	return shard, nil
}

// checkShard checks -shard against the event's capacity shards. An event without
// seats (a LOTTERY) is left to the library, which refuses it as a control.
func checkShard(ctx context.Context, c *asyncevent.Client, eventID string, shard int) error {
	cfg, err := c.GetEvent(ctx, eventID)
	switch {
	case errors.Is(err, asyncevent.ErrInvalidID):
		return clikit.Usagef("%v", err)
	case err != nil:
		return err
	}
	if n := max(cfg.CapacityShards, 1); cfg.EventType == asyncevent.FirstCome && shard >= n {
		return clikit.Usagef("-shard %d: %s has %d capacity shards: want 0 to %d", shard, eventID, n, n-1)
	}
	return nil
}

// seatsAdded is the line of an applied add: the event's capacity now, the seats left
// on its shards, and the seats its pool was given by every add (the CONFIG's
// capacityTotal counts them; the shards' do not).
func seatsAdded(cfg *asyncevent.Event, capacity *asyncevent.EventCapacity, seats int64) string {
	line := fmt.Sprintf("added: %s to %s, whose capacity is %s: %s left on its capacity shards",
		clikit.Plural(seats, "seat"), cfg.EventID, clikit.FormatInt(int(cfg.CapacityTotal)), clikit.Plural(capacity.CapacityRemaining, "seat"))
	if pool := cfg.CapacityTotal - capacity.CapacityTotal; pool > 0 {
		line += fmt.Sprintf("; %s added to its pool so far, %s", clikit.Plural(pool, "seat"), poolUse(cfg))
	}
	return line
}

// poolUse says whom the seats on the event's pool go to.
func poolUse(cfg *asyncevent.Event) string {
	if cfg.HoldFor > 0 {
		return "for the earliest WAITLISTED requests, at the next hold sweep"
	}
	return "for the next requests that find every capacity shard empty"
}

func requestCancelCmd() *command {
	var actor, key string
	return &command{
		name: "request cancel",
		args: "REQUEST_ID -actor NAME",
		summary: "cancel a SUCCEEDED FIRST_COME request (a refund, a fraud): REJECTED_CANCELLED, its seat back to the event's pool " +
			"(with holds, to the waitlist); else not applied, exit 1",
		flags: func(fs *flag.FlagSet) {
			actorFlag(fs, &actor)
			idempotencyKeyFlag(fs, &key)
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, args []string) error {
			if err := controlArgs(args, "REQUEST_ID", actor); err != nil {
				return err
			}
			if err := checkKey(key); err != nil {
				return err
			}
			c, err := e.client(ctx)
			if err != nil {
				return err
			}
			requestID := args[0]
			u, err := c.CancelRequest(ctx, requestID, asyncevent.CancelRequestInput{Actor: actor, IdempotencyKey: key})
			out, err := controlOutcome(requestID, asyncevent.ActionCancel, u, err)
			if err != nil {
				return err
			}
			if e.JSON {
				out.Config = e.storedEventJSON(ctx, u.Event)
			}
			r, err := c.GetRequest(ctx, requestID)
			if err != nil {
				return err
			}
			out.RequestID, out.Request = requestID, e.storedRequestJSON(ctx, r)
			return e.reportControl(out, func() string {
				return fmt.Sprintf("cancelled: %s is %s: its seat went back to %s's pool, %s", requestID, statusText(r), r.EventID, poolUse(u.Event)) + replayedNote(u)
			}, fmt.Errorf("%s was not cancelled: it is %s", requestID, statusText(r)))
		},
	}
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/asyncevent/asyncevent/entity"
	"github.com/asyncevent/asyncevent/httpapi"
	"github.com/asyncevent/asyncevent/seed"
)

// timeFlag is a point in time on the command line: RFC 3339, epoch milliseconds, or a
// duration from now with a leading '+' ("+90m").
type timeFlag struct {
	at  asyncevent.EpochMillis
	now func() time.Time
}

func (t *timeFlag) String() string {
	if t == nil || t.at == 0 {
		return ""
	}
	return formatMillis(t.at)
}

func (t *timeFlag) Set(s string) error {
	at, err := parseTime(s, t.now())
	if err != nil {
		return err
	}
	t.at = at
	return nil
}

func parseTime(s string, now time.Time) (asyncevent.EpochMillis, error) {
	if d, ok := strings.CutPrefix(s, "+"); ok {
		dur, err := time.ParseDuration(d)
		if err != nil {
			return 0, fmt.Errorf("%q: a duration from now such as +90m: %w", s, err)
		}
		return asyncevent.MillisOf(now.Add(dur)), nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return asyncevent.EpochMillis(n), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("%q: want RFC 3339 (2026-05-01T12:00:00Z), epoch milliseconds, or +duration", s)
	}
	return asyncevent.MillisOf(t), nil
}

// parseEventType accepts FIRST_COME / LOTTERY in any case, with '-' for '_'.
func parseEventType(s string) (asyncevent.EventType, error) {
	t := asyncevent.EventType(strings.ToUpper(strings.ReplaceAll(s, "-", "_")))
	if !t.Valid() {
		return "", clikit.Usagef("-type %q: want first-come or lottery", s)
	}
	return t, nil
}

// eventCreateOptions are the flags of event create.
type eventCreateOptions struct {
	typ                              string
	name                             string
	capacity, winners                int64
	indexShards, capacityShards      int
	peak                             float64
	holdFor                          time.Duration
	ranked                           bool
	rankSettle                       time.Duration
	starts, ends, cutoff, announceAt timeFlag
	prequeue                         timeFlag
}

func (o *eventCreateOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.typ, "type", "first-come", "event `type`: first-come or lottery")
	fs.StringVar(&o.name, "name", "", "display `name`")
	fs.Int64Var(&o.capacity, "capacity", 0, "FIRST_COME: the number of winners `N`")
	fs.DurationVar(&o.holdFor, "hold-for", 0, "FIRST_COME: hold each seat won for `DURATION` ("+asyncevent.MinHoldFor.String()+" to "+asyncevent.MaxHoldFor.String()+
		") until 'asyncevent request confirm' (paid); a release or the hold's expiry gives it to the earliest WAITLISTED request, until -ends (required with holds). 0: no holds, a seat won is SUCCEEDED")
	fs.BoolVar(&o.ranked, "ranked", false, "FIRST_COME: decide the winners by rank (queuedAt, requestId), a settle delay behind now, instead of in processing order: no request wins while one ranked before it was refused")
	fs.DurationVar(&o.rankSettle, "rank-settle", 0, "FIRST_COME with -ranked: how far behind now the line is read (default "+asyncevent.DefaultRankSettle.String()+"; "+asyncevent.MinRankSettle.String()+" to "+asyncevent.MaxRankSettle.String()+")")
	fs.Int64Var(&o.winners, "winners", 0, "LOTTERY: the number of winners `K`")
	fs.Var(&o.cutoff, "cutoff", "LOTTERY: entries until this `time` (RFC 3339, epoch ms, or +duration from now); the draw can run 30s later. "+
		"The seed is sealed by the secret in "+clikit.EnvDrawSecret+" (hex) when set, and the draw needs the same; else it is UNSEALED, readable from the table")
	fs.Var(&o.starts, "starts", "open from this `time` (default: open at once)")
	fs.Var(&o.prequeue, "prequeue-opens", "FIRST_COME with -starts: open a pre-queue at this `time`: its clicks wait and are served in an order drawn from a committed seed at the start ('asyncevent draw EVENT_ID' serves it, 'asyncevent verify' re-checks it)")
	fs.Var(&o.ends, "ends", "closed after this `time` (default: never)")
	fs.Var(&o.announceAt, "announce", "LOTTERY: planned announcement `time`")
	fs.IntVar(&o.indexShards, "index-shards", 0, "layout: GSI2 partitions `K` of the event's requests (default 1; see -peak)")
	fs.IntVar(&o.capacityShards, "capacity-shards", 0, "layout: FIRST_COME capacity items `C` (default 1; see -peak)")
	fs.Float64Var(&o.peak, "peak", 0, "derive -index-shards and -capacity-shards from the expected peak `clicks/s` by the library's rule (asyncevent plan; a FIRST_COME event also gets at least one capacity shard per 128 seats)")
}

func eventCreateCmd() *command {
	var o eventCreateOptions
	for _, t := range []*timeFlag{&o.starts, &o.ends, &o.cutoff, &o.announceAt, &o.prequeue} {
		t.now = time.Now
	}
	return &command{
		name:    "event create",
		args:    "EVENT_ID",
		summary: "create a FIRST_COME event (-capacity N, with holds: -hold-for DURATION -ends TIME) or a LOTTERY event (-winners K -cutoff TIME)",
		flags:   o.register,
		run: func(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
			et, err := o.check(fs, args)
			if err != nil {
				return err
			}
			c, err := e.client(ctx)
			if err != nil {
				return err
			}
			cfg, err := c.CreateEvent(ctx, o.config(args[0], et))
			if errors.Is(err, asyncevent.ErrInvalidEvent) || errors.Is(err, asyncevent.ErrInvalidID) {
				return clikit.Usagef("%s", inFlagTerms(err, args[0]))
			}
			if err != nil {
				return err
			}
			return printEventCreated(ctx, e, cfg)
		},
	}
}

// check checks the command line of event create before anything is read, and
// returns the event's type. The library checks the rest of the event it is given.
func (o *eventCreateOptions) check(fs *flag.FlagSet, args []string) (asyncevent.EventType, error) {
	if err := clikit.WantArgs(args, 1, "EVENT_ID"); err != nil {
		return "", err
	}
	et, err := parseEventType(o.typ)
	if err != nil {
		return "", err
	}
	if err := typeFlagsAgree(fs, et); err != nil {
		return "", err
	}
	if o.holdFor != 0 && (o.holdFor < asyncevent.MinHoldFor || o.holdFor > asyncevent.MaxHoldFor) {
		return "", clikit.Usagef("-hold-for %s: want %s to %s (or 0: no holds)", o.holdFor, asyncevent.MinHoldFor, asyncevent.MaxHoldFor)
	}
	now := asyncevent.MillisOf(time.Now())
	for _, t := range []struct {
		flag string
		at   asyncevent.EpochMillis
		what string
	}{{"-ends", o.ends.at, "the event would be closed from the start"}, {"-cutoff", o.cutoff.at, "the lottery would take no entry"}} {
		if t.at != 0 && t.at <= now {
			return "", clikit.Usagef("%s %s is past: %s", t.flag, t.at.Time().UTC().Format(time.RFC3339), t.what)
		}
	}
	if o.peak > 0 && (o.indexShards != 0 || o.capacityShards != 0) {
		return "", clikit.Usagef("-peak derives -index-shards and -capacity-shards: give one or the others")
	}
	return et, nil
}

// config is the event the flags ask for, its layout derived from -peak when given.
func (o *eventCreateOptions) config(eventID string, et asyncevent.EventType) asyncevent.EventSettings {
	cfg := asyncevent.EventSettings{
		EventID: eventID, EventType: et, Name: o.name,
		StartsAt: o.starts.at, EndsAt: o.ends.at, PrequeueOpensAt: o.prequeue.at,
		CapacityTotal: o.capacity, WinnerCount: o.winners, HoldFor: o.holdFor, Admission: clikit.AdmissionOf(o.ranked), RankSettle: o.rankSettle,
		LotteryCutoffAt: o.cutoff.at, AnnounceAt: o.announceAt.at,
		IndexShards: o.indexShards, CapacityShards: o.capacityShards,
	}
	if o.peak > 0 {
		cfg.ShardForPeak(o.peak)
	}
	return cfg
}

// printEventCreated prints the event created, with a note on stderr when its lottery
// seed is unsealed.
func printEventCreated(ctx context.Context, e *env, cfg *asyncevent.Event) error {
	if cfg.SeedMode == seed.Unsealed {
		fmt.Fprintf(e.Stderr, "note: %s\n", unsealedNote)
	}
	if e.JSON {
		return e.PrintJSON(clikit.EventItems{EventView: httpapi.NewEventView(cfg, time.Now()), Config: e.storedEventJSON(ctx, cfg)})
	}
	fmt.Fprintf(e.Stdout, "event %s created\n", cfg.EventID)
	return printItem(e.Stdout, cfg)
}

// typeFlagsAgree refuses flags of the other event type: -winners, -cutoff and
// -announce belong to a lottery, -capacity and -hold-for to a first-come event.
func typeFlagsAgree(fs *flag.FlagSet, et asyncevent.EventType) error {
	var wrong []string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "winners", "cutoff", "announce":
			if et != asyncevent.Lottery {
				wrong = append(wrong, "-"+f.Name)
			}
		case "capacity", "hold-for", "ranked", "rank-settle":
			if et != asyncevent.FirstCome {
				wrong = append(wrong, "-"+f.Name)
			}
		}
	})
	switch {
	case len(wrong) == 0:
		return nil
	case et == asyncevent.Lottery:
		return clikit.Usagef("%s: only for a FIRST_COME event; a lottery takes -winners K -cutoff TIME", strings.Join(wrong, ", "))
	}
	return clikit.Usagef("%s: only for a LOTTERY event; add -type lottery", strings.Join(wrong, ", "))
}

func eventGetCmd() *command {
	return &command{
		name:    "event get",
		args:    "EVENT_ID",
		summary: "show an event: its state, its CONFIG item and its CAPACITY (first-come) or DRAW (lottery) item",
		run: withID("EVENT_ID", func(ctx context.Context, e *env, c *asyncevent.Client, eventID string) error {
			cfg, err := c.GetEvent(ctx, eventID)
			if err != nil {
				return err
			}
			key, err := asyncevent.NewEventKey(cfg.EventID, asyncevent.EventItemConfig)
			if err != nil {
				return err
			}
			config := e.withStored(ctx, key.Key(), fieldsOf(cfg))
			out := clikit.EventItems{EventView: httpapi.NewEventView(cfg, time.Now()), Config: fieldsJSON(config)}
			var second any
			switch cfg.EventType {
			case asyncevent.FirstCome:
				capacity, err := c.GetCapacity(ctx, cfg.EventID)
				if err != nil && !errors.Is(err, asyncevent.ErrNotFound) {
					return err
				}
				if capacity != nil {
					out.Capacity, second = e.capacityJSON(ctx, capacity), capacity
				}
			case asyncevent.Lottery:
				draw, err := c.GetDraw(ctx, cfg.EventID)
				if err != nil && !errors.Is(err, asyncevent.ErrNotLottery) {
					return err
				}
				if draw != nil {
					out.Draw, second = fieldsJSON(withEntity(fieldsOf(draw), entity.Draw)), draw
				}
			}
			if e.JSON {
				return e.PrintJSON(out)
			}
			fmt.Fprintf(e.Stdout, "%s is %s\n\nCONFIG\n", cfg.EventID, out.State)
			if err := printFields(e.Stdout, config); err != nil {
				return err
			}
			if second != nil {
				fmt.Fprintf(e.Stdout, "\n%s\n", map[asyncevent.EventType]string{asyncevent.FirstCome: "CAPACITY", asyncevent.Lottery: "DRAW"}[cfg.EventType])
				return printItem(e.Stdout, second)
			}
			return nil
		}),
	}
}

func eventListCmd() *command {
	var (
		limit  int
		cursor string
	)
	return &command{
		name:    "event list",
		summary: "list the events, newest first, with their type, state and seats left (Query EVENTS, a page at a time)",
		flags: func(fs *flag.FlagSet) {
			fs.IntVar(&limit, "limit", 0, "at most `N` events (default 20, at most 100)")
			fs.StringVar(&cursor, "cursor", "", "continue from the `cursor` a previous page printed")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, args []string) error {
			if err := clikit.WantArgs(args, 0, ""); err != nil {
				return err
			}
			if limit < 0 {
				return clikit.Usagef("-limit must not be negative")
			}
			c, err := e.client(ctx)
			if err != nil {
				return err
			}
			page, err := c.ListEvents(ctx, asyncevent.PageOptions{Limit: limit, Cursor: cursor})
			switch {
			case errors.Is(err, asyncevent.ErrInvalidCursor):
				return clikit.Usagef("-cursor: %v", err)
			case errors.Is(err, asyncevent.ErrInvalidOptions):
				return clikit.Usagef("-limit: %v", err)
			case err != nil:
				return err
			}
			if e.JSON {
				return e.PrintJSON(e.eventPage(ctx, page))
			}
			tw := newTable(e.Stdout)
			fmt.Fprintln(tw, "EVENT ID\tTYPE\tSTATE\tSEATS LEFT\tCREATED\tNAME")
			for _, s := range page.Events {
				cfg := s.Event
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", cfg.EventID, cfg.EventType, s.State, seatsLeft(s), formatMillis(cfg.CreatedAt), orDash(cfg.Name))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			pageFooter(e.Stdout, len(page.Events), "event", page.NextCursor)
			return nil
		},
	}
}

// eventPage is page as event list -json prints it: each event's view, with its
// CONFIG item.
func (e *env) eventPage(ctx context.Context, page *asyncevent.EventPage) clikit.EventPage {
	evs := make([]*asyncevent.Event, len(page.Events))
	for i := range page.Events {
		evs[i] = &page.Events[i].Event
	}
	configs := e.storedEventsJSON(ctx, evs)
	view := httpapi.NewEventListView(page, time.Now())
	out := clikit.EventPage{Events: []clikit.EventSummary{}, NextCursor: view.NextCursor}
	for i, s := range view.Events {
		out.Events = append(out.Events, clikit.EventSummary{EventSummaryView: s, Config: configs[i]})
	}
	return out
}

// seatsLeft is a FIRST_COME event's seats left of its capacity, "2 of 10"; "-" for a
// lottery.
func seatsLeft(s asyncevent.EventSummary) string {
	if s.SeatsLeft == nil {
		return "-"
	}
	return fmt.Sprintf("%s of %s", clikit.FormatInt(int(*s.SeatsLeft)), clikit.FormatInt(int(s.Event.CapacityTotal)))
}

// flagTerms turns the library's names of EventSettings' fields into the flags of
// event create that set them, for its error messages.
var flagTerms = strings.NewReplacer(
	"eventId", "EVENT_ID", "eventType", "-type", "capacityTotal", "-capacity", "capacityShards", "-capacity-shards",
	"indexShards", "-index-shards", "winnerCount", "-winners", "lotteryCutoffAt", "-cutoff", "announceAt", "-announce",
	"startsAt", "-starts", "endsAt", "-ends", "prequeueOpensAt", "-prequeue-opens", "holdFor", "-hold-for", "name is", "-name is",
)

// inFlagTerms is err's text with the fields it names as event create's flags: in the
// message after the event's ID (the library's "invalid event: ID: message"), so that
// an ID that holds a field's name stays as it was given.
func inFlagTerms(err error, eventID string) string {
	text := err.Error()
	if sep := ": " + eventID + ": "; strings.Contains(text, sep) {
		head, msg, _ := strings.Cut(text, sep)
		return head + sep + flagTerms.Replace(msg)
	}
	return strings.Replace(text, "invalid eventId", "invalid EVENT_ID", 1) // ValidateID's
}

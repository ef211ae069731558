package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/seed"
)

// Timestamp is a time on the wire: an RFC 3339 string, read with any offset and
// fraction ("2026-05-01T09:00:00+09:00"), written in UTC with milliseconds
// ("2026-05-01T00:00:00.000Z"). The table keeps epoch milliseconds, so anything
// finer is cut off. Numbers are refused: one format, no guessing of units.
type Timestamp asyncevent.EpochMillis

// timestampLayout writes a Timestamp.
const timestampLayout = "2006-01-02T15:04:05.000Z07:00"

// timestampError is a value that is not an RFC 3339 string.
type timestampError struct{ detail string }

func (e *timestampError) Error() string { return e.detail }

// UnmarshalJSON reads an RFC 3339 string.
func (t *Timestamp) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil // as encoding/json does for a value it cannot set to nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &timestampError{fmt.Sprintf("a time must be an RFC 3339 string such as %q, not %s", "2026-05-01T09:00:00Z", truncate(string(b), 40))}
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return &timestampError{fmt.Sprintf("%q is not an RFC 3339 time", truncate(s, 40))}
	}
	*t = Timestamp(asyncevent.MillisOf(v))
	return nil
}

// MarshalJSON writes the time in UTC with milliseconds.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	return json.Marshal(asyncevent.EpochMillis(t).Time().Format(timestampLayout))
}

// IsZero reports an unset time (omitzero leaves it out).
func (t Timestamp) IsZero() bool { return t == 0 }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// decodeJSON reads r's body, one JSON object of at most limit bytes, into dst.
// A field dst does not have is an error, as is anything after the value.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, dst any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return newHTTPError(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "the body must be application/json")
		}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	var tooLarge *http.MaxBytesError
	err := dec.Decode(dst)
	if err == nil {
		// Exactly one value: a second one, or garbage after the first, is refused.
		_, err = dec.Token()
		switch {
		case err == io.EOF:
			return nil
		case errors.As(err, &tooLarge):
			return err // 413
		}
		return newHTTPError(http.StatusBadRequest, CodeMalformedJSON, "the body must hold one JSON object and nothing after it")
	}
	var (
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
		timeErr   *timestampError
	)
	switch {
	case errors.As(err, &tooLarge):
		return err // 413
	case errors.Is(err, io.EOF):
		return newHTTPError(http.StatusBadRequest, CodeMalformedJSON, "the body is empty; it must be a JSON object")
	case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF):
		return newHTTPError(http.StatusBadRequest, CodeMalformedJSON, "the body is not valid JSON: "+err.Error())
	case errors.As(err, &timeErr):
		return newHTTPError(http.StatusBadRequest, CodeInvalidBody, timeErr.detail)
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			return newHTTPError(http.StatusBadRequest, CodeInvalidBody, "the body must be a JSON object")
		}
		return newHTTPError(http.StatusBadRequest, CodeInvalidBody, fmt.Sprintf("field %q must be a JSON %s", field, jsonKind(typeErr.Type.Kind().String())))
	default:
		// With DisallowUnknownFields, what is left is an unknown field: encoding/json
		// has no type for that error, its text names the field.
		return newHTTPError(http.StatusBadRequest, CodeUnknownField, err.Error())
	}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64":
		return "number"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	}
	return "object"
}

// writeJSON sends v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil { // only the views of this file are written, and they marshal
		p, _, _ := problemFor(err)
		writeProblem(w, p)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// The JSON views of the library's types. Times are Timestamps, durations
// milliseconds. The CLI's -json prints the same views (cmd/asyncevent), built by the
// exported constructors here: one place turns a library result into its view.

// createEventBody is the body of POST /admin/events.
type createEventBody struct {
	EventID         string               `json:"eventId"`
	EventType       asyncevent.EventType `json:"eventType"`
	Name            string               `json:"name"`
	StartsAt        Timestamp            `json:"startsAt"`
	EndsAt          Timestamp            `json:"endsAt"`
	CapacityTotal   int64                `json:"capacityTotal"`
	WinnerCount     int64                `json:"winnerCount"`
	LotteryCutoffAt Timestamp            `json:"lotteryCutoffAt"`
	AnnounceAt      Timestamp            `json:"announceAt"`
	// PrequeueOpensAt, of a FIRST_COME event with startsAt, opens its pre-queue
	// (asyncevent.EventSettings.PrequeueOpensAt).
	PrequeueOpensAt Timestamp `json:"prequeueOpensAt"`

	// The event's layout (asyncevent.EventSettings.IndexShards and CapacityShards),
	// fixed for its life: given as is, or derived from the expected peak of clicks
	// per second (asyncevent.EventSettings.ShardForPeak), not both. All absent: the design's single
	// keys.
	IndexShards         int     `json:"indexShards"`
	CapacityShards      int     `json:"capacityShards"`
	PeakClicksPerSecond float64 `json:"peakClicksPerSecond"`

	// HoldForSeconds, of a FIRST_COME event, turns on holds and the waitlist
	// (asyncevent.EventSettings.HoldFor): 0 or absent is none, else MinHoldFor to
	// MaxHoldFor in seconds, which CreateEvent checks.
	HoldForSeconds int64 `json:"holdForSeconds"`

	// Admission, of a FIRST_COME event, is "RANKED" to decide its winners by rank
	// (asyncevent.EventSettings.Admission AdmissionRanked), absent or "" for
	// processing order; RankSettleMs its settle delay in milliseconds (absent or 0:
	// asyncevent.DefaultRankSettle), which CreateEvent checks.
	Admission    asyncevent.Admission `json:"admission"`
	RankSettleMs int64                `json:"rankSettleMs"`
}

// maxPeakClicksPerSecond bounds the peak given to asyncevent.EventSettings.ShardForPeak:
// every peak above about 160,000 clicks/s has the largest layout already.
const maxPeakClicksPerSecond = 1e9

// config is the event the body asks for. A peak derives both shard counts by the
// library's rule, as the CLI's event create -peak does (asyncevent.EventSettings.
// ShardForPeak: no capacity shards for a LOTTERY, for a FIRST_COME event no more than
// its seats and at least one per 128 of them), and excludes explicit ones. Shard
// counts out of range are left to CreateEvent to refuse (asyncevent.ErrInvalidEvent).
func (b createEventBody) config() (asyncevent.EventSettings, error) {
	cfg := asyncevent.EventSettings{
		EventID:         b.EventID,
		EventType:       b.EventType,
		Name:            b.Name,
		StartsAt:        asyncevent.EpochMillis(b.StartsAt),
		EndsAt:          asyncevent.EpochMillis(b.EndsAt),
		CapacityTotal:   b.CapacityTotal,
		WinnerCount:     b.WinnerCount,
		LotteryCutoffAt: asyncevent.EpochMillis(b.LotteryCutoffAt),
		AnnounceAt:      asyncevent.EpochMillis(b.AnnounceAt),
		PrequeueOpensAt: asyncevent.EpochMillis(b.PrequeueOpensAt),
		IndexShards:     b.IndexShards,
		CapacityShards:  b.CapacityShards,
	}
	if b.HoldForSeconds < 0 || b.HoldForSeconds > math.MaxInt64/int64(time.Second) {
		// Out of time.Duration's range; CreateEvent checks the range within it.
		return cfg, newHTTPError(http.StatusBadRequest, CodeInvalidEvent, fmt.Sprintf("holdForSeconds %d: want 0 (no holds) or %d to %d",
			b.HoldForSeconds, int64(asyncevent.MinHoldFor/time.Second), int64(asyncevent.MaxHoldFor/time.Second)))
	}
	cfg.HoldFor = time.Duration(b.HoldForSeconds) * time.Second
	if b.RankSettleMs < 0 || b.RankSettleMs > int64(asyncevent.MaxRankSettle/time.Millisecond) {
		return cfg, newHTTPError(http.StatusBadRequest, CodeInvalidEvent, fmt.Sprintf("rankSettleMs %d: want 0 (the default) or %d to %d",
			b.RankSettleMs, asyncevent.MinRankSettle.Milliseconds(), asyncevent.MaxRankSettle.Milliseconds()))
	}
	cfg.Admission, cfg.RankSettle = b.Admission, time.Duration(b.RankSettleMs)*time.Millisecond
	switch peak := b.PeakClicksPerSecond; {
	case peak < 0 || math.IsNaN(peak) || math.IsInf(peak, 0):
		return cfg, newHTTPError(http.StatusBadRequest, CodeInvalidEvent,
			fmt.Sprintf("peakClicksPerSecond %v: the expected clicks per second, more than 0 (or absent)", peak))
	case peak == 0:
		return cfg, nil
	case b.IndexShards != 0 || b.CapacityShards != 0:
		return cfg, newHTTPError(http.StatusBadRequest, CodeInvalidEvent,
			"peakClicksPerSecond derives indexShards and capacityShards: give the peak or the shards, not both")
	default:
		cfg.ShardForPeak(min(peak, maxPeakClicksPerSecond))
		return cfg, nil
	}
}

// EventView is an event as the admin routes show it.
type EventView struct {
	EventID         string               `json:"eventId"`
	EventType       asyncevent.EventType `json:"eventType"`
	Name            string               `json:"name,omitempty"`
	StartsAt        Timestamp            `json:"startsAt,omitzero"`
	EndsAt          Timestamp            `json:"endsAt,omitzero"`
	CapacityTotal   int64                `json:"capacityTotal,omitempty"`
	WinnerCount     int64                `json:"winnerCount,omitempty"`
	LotteryCutoffAt Timestamp            `json:"lotteryCutoffAt,omitzero"`
	AnnounceAt      Timestamp            `json:"announceAt,omitzero"`
	PrequeueOpensAt Timestamp            `json:"prequeueOpensAt,omitzero"`
	AnnouncedAt     Timestamp            `json:"announcedAt,omitzero"`
	SeedCommitment  string               `json:"seedCommitment,omitempty"`
	SeedMode        seed.Mode            `json:"seedMode,omitempty"` // LOTTERY: SEALED, or UNSEALED (readable from the table before the draw)
	Phase           asyncevent.UIPhase   `json:"phase,omitempty"`
	CreatedAt       Timestamp            `json:"createdAt"`

	// State is what the event is doing at the server's clock (asyncevent.Event.
	// StateAt): SCHEDULED, OPEN, PAUSED, CLOSED, DRAWING or ANNOUNCED. Paused is set
	// while an operator has paused its ingest (it may be CLOSED all the same, once
	// its end passed); ClosedAt is when an operator closed it, which moved endsAt to
	// that time too.
	State    asyncevent.EventState `json:"state"`
	Paused   bool                  `json:"paused,omitempty"`
	ClosedAt Timestamp             `json:"closedAt,omitzero"`

	// The event's layout: IndexShards partitions of its requests on GSI2 and, for a
	// FIRST_COME event, CapacityShards capacity items; 1 is the design's single key.
	IndexShards    int `json:"indexShards"`
	CapacityShards int `json:"capacityShards,omitempty"`

	// HoldForSeconds is how long a FIRST_COME event with holds keeps a seat HELD for
	// payment; absent without holds.
	HoldForSeconds int64 `json:"holdForSeconds,omitempty"`

	// Admission is "RANKED" for a FIRST_COME event that decides its winners by rank,
	// with its settle delay; both absent for processing order.
	Admission    asyncevent.Admission `json:"admission,omitempty"`
	RankSettleMs int64                `json:"rankSettleMs,omitempty"`

	// FIRST_COME: the capacity item, read with the event. LOTTERY: the draw record
	// (its seed appears once the draw has started).
	Capacity *CapacityView `json:"capacity,omitempty"`
	Draw     *DrawView     `json:"draw,omitempty"`
}

// NewEventView is e's view at now, without its capacity and its draw (the routes
// that show them read them apart).
func NewEventView(e *asyncevent.Event, now time.Time) EventView {
	v := EventView{
		EventID:         e.EventID,
		EventType:       e.EventType,
		Name:            e.Name,
		StartsAt:        Timestamp(e.StartsAt),
		EndsAt:          Timestamp(e.EndsAt),
		CapacityTotal:   e.CapacityTotal,
		WinnerCount:     e.WinnerCount,
		LotteryCutoffAt: Timestamp(e.LotteryCutoffAt),
		AnnounceAt:      Timestamp(e.AnnounceAt),
		PrequeueOpensAt: Timestamp(e.PrequeueOpensAt),
		AnnouncedAt:     Timestamp(e.AnnouncedAt),
		SeedCommitment:  e.SeedCommitment,
		SeedMode:        e.SeedMode,
		Phase:           e.Phase,
		CreatedAt:       Timestamp(e.CreatedAt),
		State:           e.StateAt(asyncevent.MillisOf(now)),
		Paused:          e.Paused,
		ClosedAt:        Timestamp(e.ClosedAt),
		IndexShards:     max(e.IndexShards, 1),
		HoldForSeconds:  int64(e.HoldFor / time.Second),
		Admission:       e.Admission,
	}
	if e.Admission == asyncevent.AdmissionRanked {
		v.RankSettleMs = e.RankSettle.Milliseconds()
		if v.RankSettleMs == 0 {
			v.RankSettleMs = asyncevent.DefaultRankSettle.Milliseconds()
		}
	}
	if e.EventType == asyncevent.FirstCome {
		v.CapacityShards = max(e.CapacityShards, 1)
	}
	return v
}

// CapacityView is a FIRST_COME event's capacity shards: with several, their sum,
// and each shard in Shards. Seats added once the shards were empty (and those a
// cancel or a hold gave back) are on the event's pool, not here: the event's
// capacityTotal counts them, and the stats' poolRemaining says how many wait.
type CapacityView struct {
	Total     int64     `json:"total"`
	Remaining int64     `json:"remaining"`
	UpdatedAt Timestamp `json:"updatedAt,omitzero"`

	Shards []CapacityShardView `json:"shards,omitempty"`
}

// CapacityShardView is one capacity shard (EVENT#<eventId>#CAPACITY#<shard> / CAPACITY).
type CapacityShardView struct {
	Shard     int       `json:"shard"`
	Total     int64     `json:"total"`
	Remaining int64     `json:"remaining"`
	UpdatedAt Timestamp `json:"updatedAt,omitzero"`
}

func newCapacityView(c *asyncevent.EventCapacity) *CapacityView {
	v := &CapacityView{Total: c.CapacityTotal, Remaining: c.CapacityRemaining, UpdatedAt: Timestamp(c.UpdatedAt)}
	for i, s := range c.Shards {
		v.Shards = append(v.Shards, CapacityShardView{Shard: i, Total: s.CapacityTotal, Remaining: s.CapacityRemaining, UpdatedAt: Timestamp(s.UpdatedAt)})
	}
	return v
}

// DrawView is a LOTTERY event's draw record, and after a draw its winners.
type DrawView struct {
	EventID        string             `json:"eventId"`
	Phase          asyncevent.UIPhase `json:"phase"`
	WinnerCount    int64              `json:"winnerCount"`
	SeedCommitment string             `json:"seedCommitment"`
	SeedMode       seed.Mode          `json:"seedMode,omitempty"` // SEALED, or UNSEALED (readable from the table before the draw)
	Seed           string             `json:"seed,omitempty"`
	EntryCount     int64              `json:"entryCount"`
	EntriesHash    string             `json:"entriesHash,omitempty"`
	DrawnAt        Timestamp          `json:"drawnAt,omitzero"`
	AnnouncedAt    Timestamp          `json:"announcedAt,omitzero"`
	Winners        []string           `json:"winners,omitempty"`
	// Order, of a served pre-queue, is its entries in the order they were served.
	Order []string `json:"order,omitempty"`
}

// NewDrawView is the view of d, with winners (none: the event's view of its draw).
// A pre-queue's serve sets Order.
func NewDrawView(d *asyncevent.DrawRecord, winners []string) *DrawView {
	return &DrawView{
		EventID:        d.EventID,
		Phase:          d.Phase,
		WinnerCount:    d.WinnerCount,
		SeedCommitment: d.SeedCommitment,
		SeedMode:       d.SeedMode,
		Seed:           d.Seed,
		EntryCount:     d.EntryCount,
		EntriesHash:    d.EntriesHash,
		DrawnAt:        Timestamp(d.DrawnAt),
		AnnouncedAt:    Timestamp(d.AnnouncedAt),
		Winners:        winners,
	}
}

// DrawResultView is the answer of POST /admin/events/{eventId}/draw for a LOTTERY:
// the record revealed, with the winners, best score first, always shown ([] for
// none), where the event's view of its draw (DrawView) has none.
type DrawResultView struct {
	*DrawView
	Winners []string `json:"winners"`
}

// NewDrawResultView is the view of a lottery's draw.
func NewDrawResultView(res *asyncevent.DrawResult) DrawResultView {
	return DrawResultView{DrawView: NewDrawView(&res.Record, res.Winners), Winners: nonNil(res.Winners)}
}

// PrequeueServeView is the answer of POST /admin/events/{eventId}/draw for a
// FIRST_COME event with a pre-queue: its record, its winners (the first of the
// order) and its order, the entries as they were served, both always shown.
type PrequeueServeView struct {
	DrawResultView
	Order []string `json:"order"`
}

// NewPrequeueServeView is the view of a pre-queue's serve.
func NewPrequeueServeView(res *asyncevent.PrequeueResult) PrequeueServeView {
	v := PrequeueServeView{DrawResultView: DrawResultView{DrawView: NewDrawView(&res.Record, res.Winners), Winners: nonNil(res.Winners)},
		Order: nonNil(res.Order)}
	v.DrawView.Order = res.Order
	return v
}

// VerificationView is the result of GET /admin/events/{eventId}/draw/verify.
type VerificationView struct {
	EventID    string   `json:"eventId"`
	OK         bool     `json:"ok"`
	EntryCount int      `json:"entryCount"`
	Winners    []string `json:"winners"`
	Problems   []string `json:"problems"`
	// Order, of a pre-queue, is its entries in the order recomputed from the seed.
	Order []string `json:"order,omitempty"`
	// Late are the requests that reached the table after the entries were recorded,
	// absent from the record: a lottery's end REJECTED_NOT_DRAWN, a pre-queue's join
	// the sale's line after the drawn order. They are no problem of the draw.
	Late []string `json:"late,omitempty"`
}

// NewVerificationView is the view of a lottery's verification.
func NewVerificationView(v *asyncevent.Verification) VerificationView {
	return VerificationView{EventID: v.EventID, OK: v.OK(), EntryCount: v.EntryCount,
		Winners: nonNil(v.Winners), Problems: nonNil(v.Problems), Late: v.Late}
}

// NewPrequeueVerificationView is the view of a pre-queue's verification, with its
// order.
func NewPrequeueVerificationView(v *asyncevent.PrequeueVerification) VerificationView {
	return VerificationView{EventID: v.EventID, OK: v.OK(), EntryCount: v.EntryCount,
		Winners: nonNil(v.Winners), Problems: nonNil(v.Problems), Order: v.Order, Late: v.Late}
}

// nonNil is ids, or an empty list for none: a list the view always shows is [],
// never null.
func nonNil(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}

// ParticipationView is the answer to POST /events/{eventId}/participations.
type ParticipationView struct {
	RequestID string              `json:"requestId"`
	EventID   string              `json:"eventId"`
	Status    asyncevent.Status   `json:"status"`
	UIResult  asyncevent.UIResult `json:"uiResult"`
	Duplicate bool                `json:"duplicate"`
	// Page is the page of the request a browser shows its user, where the server
	// has one (MountRequestPage).
	Page string `json:"page,omitempty"`
}

// RequestView is a request. The user routes show a user's own request without the
// operator's fields (failure details, lease); the admin routes show everything.
type RequestView struct {
	RequestID       string                `json:"requestId"`
	EventID         string                `json:"eventId"`
	UserID          string                `json:"userId"`
	EventType       asyncevent.EventType  `json:"eventType"`
	Status          asyncevent.Status     `json:"status"`
	UIResult        asyncevent.UIResult   `json:"uiResult"`
	ResultCode      asyncevent.ResultCode `json:"resultCode,omitempty"`
	UIPhase         asyncevent.UIPhase    `json:"uiPhase,omitempty"`
	LotteryCutoffAt Timestamp             `json:"lotteryCutoffAt,omitzero"`
	AnnouncedAt     Timestamp             `json:"announcedAt,omitzero"`
	RequestedAt     Timestamp             `json:"requestedAt"`
	QueuedAt        Timestamp             `json:"queuedAt,omitzero"`
	StartedAt       Timestamp             `json:"startedAt,omitzero"`
	FinishedAt      Timestamp             `json:"finishedAt,omitzero"`

	// With holds (an event's holdForSeconds): HoldExpiresAt is when the hold runs out,
	// kept once it ended (released or expired); HoldSecondsLeft, of a HELD request
	// only, is the time left to confirm it, in whole seconds rounded down by the
	// server's clock, 0 once it ran out (the hold sweep then ends it); ServedAt is when
	// a WAITLISTED request got a seat given back.
	HoldExpiresAt   Timestamp `json:"holdExpiresAt,omitzero"`
	HoldSecondsLeft *int64    `json:"holdSecondsLeft,omitempty"`
	ServedAt        Timestamp `json:"servedAt,omitzero"`

	// Queue, of a FIRST_COME request that waits in line (RECEIVED or QUEUED) and was
	// read one at a time (GET /requests/{requestId}, GET /admin/requests/{requestId}),
	// is its estimated place in line; absent once a worker reached it, and in the
	// listings.
	Queue *PlaceView `json:"queue,omitempty"`
	// Prequeue, of an entry of a pre-queue read one at a time: whether its order is
	// drawn yet, and then its place in it, whatever its result since
	// (asyncevent.PrequeuePlace).
	Prequeue *PrequeuePlaceView `json:"prequeue,omitempty"`
	// Waitlist, of a WAITLISTED request read one at a time: its place on the
	// event's waitlist and when the waitlist ends (asyncevent.WaitlistPlace).
	Waitlist *WaitlistPlaceView `json:"waitlist,omitempty"`

	// Admin only. The lease only while the request is PROCESSING: it means nothing
	// once a worker is done with it.
	FailureClass   asyncevent.FailureClass `json:"failureClass,omitempty"`
	ErrorCode      string                  `json:"errorCode,omitempty"`
	ErrorMessage   string                  `json:"errorMessage,omitempty"`
	IdempotencyKey string                  `json:"idempotencyKey,omitempty"`
	LeaseOwner     string                  `json:"leaseOwner,omitempty"`
	LeaseExpiresAt Timestamp               `json:"leaseExpiresAt,omitzero"`
}

// newRequestView is r's view at now; admin adds the operator's fields.
func newRequestView(r *asyncevent.Request, admin bool, now time.Time) RequestView {
	v := RequestView{
		RequestID:       r.RequestID,
		EventID:         r.EventID,
		UserID:          r.UserID,
		EventType:       r.EventType,
		Status:          r.Status,
		UIResult:        r.UIResult,
		ResultCode:      r.ResultCode,
		UIPhase:         r.UIPhase,
		LotteryCutoffAt: Timestamp(r.LotteryCutoffAt),
		AnnouncedAt:     Timestamp(r.AnnouncedAt),
		RequestedAt:     Timestamp(r.RequestedAt),
		QueuedAt:        Timestamp(r.QueuedAt),
		StartedAt:       Timestamp(r.StartedAt),
		FinishedAt:      Timestamp(r.FinishedAt),
		HoldExpiresAt:   Timestamp(r.HoldExpiresAt),
		ServedAt:        Timestamp(r.ServedAt),
	}
	if r.Status == asyncevent.StatusHeld {
		left := int64(holdLeft(r, now) / time.Second)
		v.HoldSecondsLeft = &left
	}
	v.Queue = newPlaceView(r.Queue)
	if p := r.Prequeue; p != nil {
		v.Prequeue = &PrequeuePlaceView{Frozen: p.Frozen, Place: p.Place, Entries: p.Entries, Seats: p.Seats, Late: p.Late, StartsAt: Timestamp(p.StartsAt), AsOf: Timestamp(p.AsOf)}
	}
	if w := r.Waitlist; w != nil {
		v.Waitlist = &WaitlistPlaceView{Ahead: w.Ahead, EndsAt: Timestamp(w.EndsAt), AsOf: Timestamp(w.AsOf)}
	}
	if admin {
		v.FailureClass, v.ErrorCode, v.ErrorMessage = r.FailureClass, r.ErrorCode, r.ErrorMessage
		if lock, err := asyncevent.NewLockKey(r.EventID, r.UserID); err == nil { // the IDs of a stored request
			v.IdempotencyKey = lock.IdempotencyKey()
		}
		if l := r.Lease; l != nil {
			v.LeaseOwner, v.LeaseExpiresAt = l.Owner, Timestamp(l.ExpiresAt)
		}
	}
	return v
}

// holdLeft is the time left at now on the hold of a HELD request; 0 once it ran out.
func holdLeft(r *asyncevent.Request, now time.Time) time.Duration {
	return max(r.HoldExpiresAt.Time().Sub(now), 0)
}

// PrequeuePlaceView is where a waiting entry of a pre-queue stands: frozen, its place
// in the drawn order (1 is served first) among entries, for seats seats; late when the
// request reached the table after the entries were recorded (no place: it joins the
// sale's line after the drawn order); startsAt, the sale's start, from which the
// order is drawn.
type PrequeuePlaceView struct {
	Frozen  bool  `json:"frozen"`
	Place   int64 `json:"place,omitempty"`
	Entries int64 `json:"entries,omitempty"`
	Seats   int64 `json:"seats"`
	Late    bool  `json:"late,omitempty"`
	// StartsAt is the sale's start, from which the order is drawn.
	StartsAt Timestamp `json:"startsAt,omitzero"`
	AsOf     Timestamp `json:"asOf"`
}

// WaitlistPlaceView is where a WAITLISTED request stands on its event's waitlist:
// Ahead, the requests before it (the next seat given back goes to the first of
// them; 0: this one gets it); EndsAt, when the waitlist ends and what still waits
// is refused (absent on an event created without an end); AsOf, when the counts
// behind Ahead were read.
type WaitlistPlaceView struct {
	Ahead  int64     `json:"ahead"`
	EndsAt Timestamp `json:"endsAt,omitzero"`
	AsOf   Timestamp `json:"asOf"`
}

// PlaceView is where a waiting request stands in its event's line
// (asyncevent.QueueEstimate): Ahead, the requests queued before it that no worker
// has finished; RatePerSecond, the requests the workers finish a second while they
// have work, over the last 3 seconds counted; WaitSeconds, the time until they have
// decided it at that rate (those ahead, then its own turn), in whole seconds rounded
// up, absent while no rate
// is measured (rate 0: no worker has finished a request lately, the wait is
// unknown, even at the front of the line); AsOf, when the event's progress behind
// the estimate was read. The estimate assumes the
// workers take requests in queue order, which a standard queue does only roughly.
type PlaceView struct {
	Ahead         int64     `json:"ahead"`
	WaitSeconds   *int64    `json:"waitSeconds,omitempty"`
	RatePerSecond float64   `json:"ratePerSecond"`
	AsOf          Timestamp `json:"asOf"`
}

func newPlaceView(q *asyncevent.QueueEstimate) *PlaceView {
	if q == nil {
		return nil
	}
	v := &PlaceView{Ahead: q.Ahead, RatePerSecond: q.Rate, AsOf: Timestamp(q.AsOf)}
	// The library's Wait is zero both at the front of the line and while the rate is
	// 0 (unknown): only a rate tells them apart.
	if q.Rate > 0 {
		v.WaitSeconds = new(secondsUp(q.Wait))
	}
	return v
}

// secondsUp is d in whole seconds, rounded up: a wait of 0.2 s is 1 s, not 0.
func secondsUp(d time.Duration) int64 { return int64((max(d, 0) + time.Second - 1) / time.Second) }

// PageView is one page of requests; NextCursor, when present, continues it.
type PageView struct {
	Requests   []RequestView `json:"requests"`
	NextCursor string        `json:"nextCursor,omitempty"`
}

func newPageView(p *asyncevent.RequestPage, admin bool, now time.Time) PageView {
	v := PageView{Requests: make([]RequestView, 0, len(p.Requests)), NextCursor: p.NextCursor}
	for i := range p.Requests {
		v.Requests = append(v.Requests, newRequestView(&p.Requests[i], admin, now))
	}
	return v
}

// StatusLogView is one transition of a request.
type StatusLogView struct {
	FromStatus asyncevent.Status `json:"fromStatus,omitempty"`
	ToStatus   asyncevent.Status `json:"toStatus"`
	OccurredAt Timestamp         `json:"occurredAt"`
	Message    string            `json:"message,omitempty"`
}

// StatusLogsView is a request's status log, oldest first.
type StatusLogsView struct {
	RequestID string          `json:"requestId"`
	Logs      []StatusLogView `json:"logs"`
}

// newStatusLogsView is the view of requestID's status log, [] when empty.
func newStatusLogsView(requestID string, logs []asyncevent.StatusLog) StatusLogsView {
	v := StatusLogsView{RequestID: requestID, Logs: make([]StatusLogView, 0, len(logs))}
	for _, l := range logs {
		v.Logs = append(v.Logs, StatusLogView{FromStatus: l.FromStatus, ToStatus: l.ToStatus, OccurredAt: Timestamp(l.OccurredAt), Message: l.Message})
	}
	return v
}

// DurationsView summarises durations, in milliseconds.
type DurationsView struct {
	Count int     `json:"count"`
	P50Ms float64 `json:"p50Ms"`
	P95Ms float64 `json:"p95Ms"`
	MaxMs float64 `json:"maxMs"`
}

func newDurationsView(d asyncevent.Durations) DurationsView {
	return DurationsView{Count: d.Count, P50Ms: millis(d.P50), P95Ms: millis(d.P95), MaxMs: millis(d.Max)}
}

// millis is d in milliseconds, to the nanosecond.
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// StatsView is GET /admin/events/{eventId}/stats.
type StatsView struct {
	EventID      string                        `json:"eventId"`
	EventType    asyncevent.EventType          `json:"eventType"`
	Requests     int                           `json:"requests"`
	ByStatus     map[asyncevent.Status]int     `json:"byStatus"`
	ByResultCode map[asyncevent.ResultCode]int `json:"byResultCode"`

	// FIRST_COME only: the event's capacity (seats added included), the seats its
	// capacity shards hold, and the seats on its pool (added once the shards were
	// empty, or given back by a release, an expiry or a cancel, not yet taken).
	CapacityTotal     *int64 `json:"capacityTotal,omitempty"`
	CapacityRemaining *int64 `json:"capacityRemaining,omitempty"`
	PoolRemaining     *int64 `json:"poolRemaining,omitempty"`

	QueueWait  DurationsView `json:"queueWait"`
	Processing DurationsView `json:"processing"`
	Fairness   FairnessView  `json:"fairness"`

	// Holds, of a FIRST_COME event with holds only.
	Holds *HoldStatsView `json:"holds,omitempty"`

	// Queue, of a FIRST_COME event whose progress is counted, is its line; absent for
	// a LOTTERY, or when the progress could not be read.
	Queue *QueueStatsView `json:"queue,omitempty"`
}

// FairnessView is an event's fairness (asyncevent.Fairness): inversions count the
// losers queued before a winner, lateWinners the winners queued after a loser (zero
// together), each with its largest gap in milliseconds; late counts the
// REJECTED_LATE requests, in neither.
type FairnessView struct {
	Inversions         int     `json:"inversions"`
	MaxGapMs           float64 `json:"maxGapMs"`
	LateWinners        int     `json:"lateWinners"`
	LateWinnerMaxGapMs float64 `json:"lateWinnerMaxGapMs"`
	Late               int     `json:"late"`
}

func newFairnessView(f asyncevent.Fairness) FairnessView {
	return FairnessView{Inversions: f.Inversions, MaxGapMs: millis(f.MaxGap), LateWinners: f.LateWinners,
		LateWinnerMaxGapMs: millis(f.LateWinnerMaxGap), Late: f.Late}
}

// QueueStatsView is a FIRST_COME event's line (asyncevent.QueueStats): Depth, the
// requests that arrived and no worker has finished; RatePerSecond, the requests the
// workers finish a second while they have work (over the last 3 seconds counted);
// DrainSeconds, the time to finish Depth at that rate, in whole seconds rounded up,
// absent while the rate is 0 and requests wait (unknown); AsOf, when the progress
// was read; and Series, the line second by second from the event's first arrival
// or over the last 15 minutes, whichever is shorter, as far as the nodes had written their counts by AsOf: at the end of each second,
// its depth and the requests the workers finished in it.
type QueueStatsView struct {
	Depth         int64            `json:"depth"`
	RatePerSecond float64          `json:"ratePerSecond"`
	DrainSeconds  *int64           `json:"drainSeconds,omitempty"`
	AsOf          Timestamp        `json:"asOf"`
	Series        []QueuePointView `json:"series"`
}

// QueuePointView is one second of an event's line (asyncevent.QueuePoint).
type QueuePointView struct {
	At            Timestamp `json:"at"`
	Depth         int64     `json:"depth"`
	RatePerSecond float64   `json:"ratePerSecond"`
}

func newQueueStatsView(q *asyncevent.QueueStats) *QueueStatsView {
	if q == nil {
		return nil
	}
	v := &QueueStatsView{Depth: q.Depth, RatePerSecond: q.Rate, AsOf: Timestamp(q.AsOf),
		Series: make([]QueuePointView, 0, len(q.Series))}
	// The library's DrainTime is zero both when nothing waits (drained: known) and
	// while the rate is 0 (unknown).
	if q.Rate > 0 || q.Depth == 0 {
		v.DrainSeconds = new(secondsUp(q.DrainTime))
	}
	for _, p := range q.Series {
		v.Series = append(v.Series, QueuePointView{At: Timestamp(p.At), Depth: p.Depth, RatePerSecond: p.Rate})
	}
	return v
}

// HoldStatsView is what became of the holds of an event with holds
// (asyncevent.HoldStats): requests HELD and WAITLISTED now, holds confirmed
// (SUCCEEDED), released and expired (REJECTED_RELEASED, REJECTED_HOLD_EXPIRED), and
// the seats given back by released and expired holds, handed on to the waitlist, and
// given back but not handed on yet. HoldForMs is HoldForSeconds in milliseconds (the
// CLI's stats has always printed it).
type HoldStatsView struct {
	HoldForSeconds int64 `json:"holdForSeconds"`
	HoldForMs      int64 `json:"holdForMs"`
	Held           int   `json:"held"`
	Confirmed      int   `json:"confirmed"`
	Released       int   `json:"released"`
	Expired        int   `json:"expired"`
	Waitlisted     int   `json:"waitlisted"`
	SeatsReturned  int64 `json:"seatsReturned"`
	SeatsServed    int64 `json:"seatsServed"`
	SeatsWaiting   int64 `json:"seatsWaiting"`
}

func newHoldStatsView(h *asyncevent.HoldStats) *HoldStatsView {
	if h == nil {
		return nil
	}
	return &HoldStatsView{
		HoldForSeconds: int64(h.HoldFor / time.Second), HoldForMs: h.HoldFor.Milliseconds(),
		Held: h.Held, Confirmed: h.Confirmed, Released: h.Released, Expired: h.Expired, Waitlisted: h.Waitlisted,
		SeatsReturned: h.SeatsReturned, SeatsServed: h.SeatsServed, SeatsWaiting: h.SeatsWaiting,
	}
}

// HoldSweepView is the report of passes of an event's hold sweep
// (asyncevent.HoldSweepReport), summed: the route runs one pass, the CLI's holds
// sweep as many as there is work for. Waiting and More are the last pass's.
type HoldSweepView struct {
	EventID string `json:"eventId"`
	Passes  int    `json:"passes"`  // passes summed
	Expired int    `json:"expired"` // holds that ran out, their seats given to the waitlist
	Served  int    `json:"served"`  // waitlisted requests now HELD on a seat given back
	Closed  int    `json:"closed"`  // waitlisted requests ended REJECTED_CAPACITY: the event closed
	Cleared int    `json:"cleared"` // records of holds that had ended otherwise, deleted
	Waiting int64  `json:"waiting"` // seats given back and not handed on (no one waitlisted)
	More    bool   `json:"more"`    // the last pass reached its maxWrites: run it again
}

// NewHoldSweepView is the view of the passes of eventID's hold sweep that made
// reports, in order.
func NewHoldSweepView(eventID string, reports ...*asyncevent.HoldSweepReport) HoldSweepView {
	v := HoldSweepView{EventID: eventID}
	for _, r := range reports {
		v.Add(r)
	}
	return v
}

// Add counts one more pass, which made r.
func (v *HoldSweepView) Add(r *asyncevent.HoldSweepReport) {
	v.Passes++
	v.Expired += r.Expired
	v.Served += r.Served
	v.Closed += r.Closed
	v.Cleared += r.Cleared
	v.Waiting, v.More = r.Waiting, r.More
}

// NewStatsView is the view of s.
func NewStatsView(s *asyncevent.EventStats) StatsView {
	v := StatsView{
		EventID:      s.EventID,
		EventType:    s.EventType,
		Requests:     s.Requests,
		ByStatus:     s.ByStatus,
		ByResultCode: s.ByResultCode,
		QueueWait:    newDurationsView(s.QueueWait),
		Processing:   newDurationsView(s.Processing),
		Fairness:     newFairnessView(s.Fairness),
	}
	if s.EventType == asyncevent.FirstCome {
		v.CapacityTotal, v.CapacityRemaining, v.PoolRemaining = &s.CapacityTotal, &s.CapacityRemaining, &s.PoolRemaining
	}
	if v.ByStatus == nil {
		v.ByStatus = map[asyncevent.Status]int{}
	}
	if v.ByResultCode == nil {
		v.ByResultCode = map[asyncevent.ResultCode]int{}
	}
	v.Holds = newHoldStatsView(s.Holds)
	v.Queue = newQueueStatsView(s.Queue)
	return v
}

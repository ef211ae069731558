// Package entity names the kinds of item in an asyncevent table. Every item carries
// its kind in the entityType attribute; asyncevent's Key.Entity tells the kind of a
// key.
package entity

// Type tells which kind of item a row of the table is.
type Type string

// The kinds of item of the table.
const (
	Request     Type = "REQUEST"
	Idempotency Type = "IDEMPOTENCY"
	Capacity    Type = "CAPACITY"
	StatusLog   Type = "STATUS_LOG"
	Config      Type = "CONFIG"
	Draw        Type = "DRAW"
	Hold        Type = "HOLD"        // a held seat's expiry, for the hold sweep
	Returns     Type = "RETURNS"     // the seats given back, for the waitlist
	HoldEvent   Type = "HOLD_EVENT"  // an event with holds, in the hold registry
	Audit       Type = "AUDIT"       // an operator's control of an event
	Operation   Type = "OPERATION"   // a control of an event's seats applied under an idempotency key
	EventEntry  Type = "EVENT_ENTRY" // an event in the event list
	Progress    Type = "PROGRESS"    // one second of an event's progress, for a place in line
	Waitlist    Type = "WAITLIST"    // one minute of an event's waitlist counts, for a place on it
	Entries     Type = "ENTRIES"     // a chunk of the entries a draw or a pre-queue's serve recorded
	Admission   Type = "ADMISSION"   // how far a ranked event's admission has decided its line
)

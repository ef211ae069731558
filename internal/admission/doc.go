// Package admission is the algorithm of a ranked first-come event's admission
// (EventSettings.Admission AdmissionRanked; docs/design.md, "Ranked admission"): the
// winners are decided by rank, (queuedAt, requestId), the order of GSI2SK, not by the
// order the workers happen to process the messages.
//
// One admission per event decides the line, holding a lease on the event's admission
// record. It reads the requests ranked after the record's watermark (through) and
// queued at least the settle delay ago, merged over the index shards, and decides
// them in waves: a wave is at most the seats left (read strongly consistent, less the
// requests of the admission's own waves since, while no other wave was written), it
// is written on the record by name with the new watermark before any of its claims (a
// compare-and-set on the record's counts of waves and of late arrivals as read, under
// the lease), and every request of it is decided, and the wave recorded decided,
// before the next wave begins. So a request can lose for want of a seat only once
// every request ranked before it has won or ended without a seat for another reason.
// Once the seats are gone the record says so (refusing), and every worker refuses
// the rest at once.
//
// The record is the truth. A request ranked at or before the watermark that no wave
// names and that is not decided (its put, or its GSI2 entry, landed after the
// admission read its place: a slow network, a frozen process, an ingest clock behind)
// is a late arrival. It is decided where the admission stands when a worker meets it
// (Wait): while the admission is not refusing, the worker adds it to the record's
// late set (condition: not refusing) and the admission's next wave takes it first, so
// it wins if that wave has a seat for it; once the admission is refusing, the worker
// ends it late. It is never handed a seat ahead of a request already refused for want
// of one (no claim runs beside a wave but the wave's own, and the admission refuses
// only once every wave is decided and no seat is left), and never left waiting.
// Exactly N stays with the seat claim (tokens and fences): two admissions at once (a
// lease taken over while its holder still runs) decide the same recorded wave, and
// the record's compare-and-set lets only one of them write the next.
//
// The package knows no table: the record, the line, the requests and the seats are
// read and written through a Store, which package asyncevent implements with its
// rows. Safety rests on the Store's conditional writes, never on a clock: time here
// decides liveness only (when to read, when to take the lease over, when a delivery
// gives up).
package admission

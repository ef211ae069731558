// Package drawproof is what makes a draw checkable by anyone (docs/design.md,
// "Lottery"): the commitment to its seed, published when the event is made and
// checked when the draw reveals the seed, and the verification of a recorded draw,
// or of a served pre-queue (VerifyPrequeue), from plain values, its Draw record, the
// requests GSI2 shows and the requests read one by one.
//
// The event's config publishes seedCommitment = SHA-256(seed) when the event is made.
// The draw freezes the entries, the requests queued no later than the cutoff that are
// still in the running, recording their count and draw.EntriesHash, reveals the seed,
// and gives a win to the K entries with the smallest draw.Score(seed, entriesHash,
// requestId). Anyone holding the revealed seed and the recorded entries recomputes
// the winners, whatever landed on the table after the record.
//
// The package knows no table: package asyncevent reads the record and the requests
// with its rows and hands them over (drawrun's Chunks and Requests).
package drawproof

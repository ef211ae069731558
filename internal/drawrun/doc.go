// Package drawrun is the algorithm of a draw: a LOTTERY event's Draw and a FIRST_COME
// event's pre-queue serve (docs/design.md, "Lottery", "The draw's entries" and "The
// pre-queue"). Both begin the same way (Open): the seed checked against the published
// commitment, the event frozen (its Draw record and config COLLECTING → DRAWING), the
// candidates read from GSI2 under the bounds of the config as frozen, a lottery's
// entries collected, the set written by name in chunks and then recorded by count and
// hash with the seed revealed, the last moments before the bound read again. Then a
// lottery finalises the recorded entries in waves (Finalise), and a pre-queue serves
// them in their drawn order, in waves never larger than the seats left (Serve).
//
// The record is the truth, not a clock. Once the Draw record names the entries, that
// set decides the draw and every later run of it, whatever reaches the table since: a
// run resumed after a crash reads the set back from its chunks (ReadBack), and a
// request that landed after the record is answered by a rule of its own, never drawn.
// Time here decides only when a draw may begin (the bounds' OpensAt), never what it
// holds.
//
// The package knows no table: the Draw record, the config, the requests and the
// chunks are read and written through a Store, which package asyncevent implements
// with its rows. Each write is conditional on the item it changes, so two runs at once
// are safe, only wasteful: whoever records first wins, and the other goes on with that
// set.
package drawrun

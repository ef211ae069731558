package main

// A mutant is one edit that weakens one rule of the library, and the tests that
// must catch it.
type mutant struct {
	name string // short and unique, for -only
	rule string // the rule the edit weakens, in one sentence
	file string // the file edited, from the module root
	old  string // the text replaced: found exactly once in file
	new  string // what replaces it
	pkg  string // the package whose tests catch it, from the module root ("." the root)
	run  string // the go test -run pattern naming those tests
}

// mutants are the weakenings of issue 56, one row each. Every pattern names tests (and
// subtests) that fail with the edit: together they fail on every run, though a test
// that plays its scenario with random timing (the pre-queue's) may alone catch it on
// some runs only.
var mutants = []mutant{
	{
		name: "move-without-epoch",
		rule: "A seat move is a compare-and-set on the request's seatEpoch, so that a late copy of a move cannot set back a claim that moved on.",
		file: "request.go",
		old:  "cond: all(heldUnderLease, atEpoch),",
		new:  "cond: heldUnderLease,",
		pkg:  ".",
		run:  "^TestStaleMoveRollsTheClaimBack$",
	},
	{
		name: "close-without-holders",
		rule: "A seat place is closed to a request only when it records no seat of the request (seat closed: NOT contains(holders, seatToken)).",
		file: "capacity.go",
		old:  "notHeldHere = all(placeExists, notHolder)",
		new:  "notHeldHere = placeExists",
		pkg:  ".",
		run:  "^(TestAFailedSendClosesTheHomeShard|TestSeatUncertainPutNeverLandsThenTheCloseHeals|TestSeatLegacyItemMovedOffItsHome)$/^the_claim_first$",
	},
	{
		name: "release-without-status",
		rule: "A release ends only a HELD request (the hold released row leaves status HELD), never one its confirm made SUCCEEDED.",
		file: "request.go",
		old:  "from: []leave{{status: StatusHeld, when: thisHold}}, to: StatusRejected,",
		new:  "from: []leave{{status: StatusHeld, when: thisHold}, {status: StatusSucceeded, when: thisHold}}, to: StatusRejected,",
		pkg:  ".",
		run:  "^TestHoldRules$/^a_release_landing_after_the_confirm$",
	},
	{
		name: "claim-without-void",
		rule: "A claim takes no seat on a place closed to the request at its epoch (NOT contains(void, fenceToken)).",
		file: "capacity.go",
		old:  "seatFree    = all(seatLeft, notHolder, notClosed)",
		new:  "seatFree    = all(seatLeft, notHolder)",
		pkg:  ".",
		run:  "^(TestAFinalFailureVoidsTheHomeToken|TestSeatDelaysWorkersSevenSecondsApart)$",
	},
	{
		name: "fail-without-close",
		rule: "A request under a lease ends FAILED_FINAL only after the place its claim may land on is closed to it.",
		file: "processor.go",
		old:  "\t\tif l.claim != nil {\n",
		new:  "\t\tif false && l.claim != nil {\n",
		pkg:  ".",
		run:  "^(TestAFinalFailureVoidsTheHomeToken|TestSeatDelaysClaimCutOffOnTheLastReceive)$",
	},
	{
		name: "leave-inherited-open",
		rule: "A claim leaves a place that refused it for throughput, where an earlier delivery's claim may be, only once the place is closed to it.",
		file: "internal/seatclaim/walk.go",
		old:  "if res != Refused || !c.Inherited {",
		new:  "if true {",
		pkg:  ".",
		run:  "^(TestSeatDelaysTakeoverWhileTheOldClaimIsNineSecondsOnTheWire|TestSeatDelaysWorkersSevenSecondsApart)$",
	},
	{
		name: "empty-pool-left-open",
		rule: "A request is refused on an empty pool only once the pool is closed to it (a seat added later takes no claim of it sent before).",
		file: "internal/seatclaim/walk.go",
		old:  "held, err := Close(ctx, s.st, c.Place, c.Epoch, LeaveCloseTries)",
		new:  "held, err := false, error(nil)",
		pkg:  ".",
		run:  "^(TestSeatDelaysPoolClaimLandingAfterARefill|TestSeatDelaysRaceAddCapacityToThePool)$/^landing_after_the_request_was_refused$",
	},
	{
		name: "enqueue-failed-home-open",
		rule: "MarkEnqueueFailed closes the request's home shard before FAILED_FINAL, as its message may have reached a worker after all.",
		file: "request.go",
		old:  "if held, err := c.closeHomeIfFirstCome(ctx, ref); err != nil || held {",
		new:  "if held, err := false, error(nil); err != nil || held {",
		pkg:  ".",
		run:  "^(TestAFailedSendClosesTheHomeShard|TestSeatSendFailedButWentThroughUnderALease)$",
	},
	{
		name: "sold-out-leaves-processing",
		rule: "The sold-out rejection without a lease leaves only RECEIVED or QUEUED, never a PROCESSING request whose delivery may hold a seat.",
		file: "request.go",
		old:  "from: []leave{{status: StatusQueued}, {status: StatusReceived}}, to: StatusRejected,\n\t\tsets: append(finalSets(UIRejected, ResultRejectedCapacity)",
		new:  "from: []leave{{status: StatusQueued}, {status: StatusReceived}, {status: StatusProcessing}}, to: StatusRejected,\n\t\tsets: append(finalSets(UIRejected, ResultRejectedCapacity)",
		pkg:  ".",
		run:  "^TestRequestRules$/^sold_out_leaves_a_request_processing_under_a_lease$",
	},
	{
		name: "add-to-empty-shard",
		rule: "Seats are added to a capacity shard only while it holds seats (capacityRemaining > 0): an empty shard takes no seat back.",
		file: "capacity.go",
		old:  "seatLeftWithRoom = all(seatLeft, func(v values)",
		new:  "seatLeftWithRoom = all(func(v values)",
		pkg:  ".",
		run:  "^TestShardEmptiedBetweenAddsReadAndWrite$",
	},
	{
		name: "marker-overwrites",
		rule: "An operation's marker is put only where none is (attribute_not_exists), so that an idempotency key applies once.",
		file: "operation.go",
		old:  "item: entity.Operation, op: opPut, cond: notExists,",
		new:  "item: entity.Operation, op: opPut,",
		pkg:  ".",
		run:  "^(TestARefusedKeyStaysRefused|TestAddCapacityRetriedUnderItsKeyAppliesOnce)$",
	},
	{
		name: "fail-seated",
		rule: "MarkFailed fails a first-come request only under its lease (notSeated), as one may hold a seat from a claim without a lease.",
		file: "request.go",
		old:  "var failable = all(leaseFree, notAnEntry, notSeated)",
		new:  "var failable = all(leaseFree, notAnEntry)",
		pkg:  ".",
		run:  "^(TestRequestRules|TestStatusLogNamesTheStatusLeft)$/^a_final_failure_without_a_lease_leaves_a_first-come_request$",
	},
	{
		name: "move-without-lease",
		rule: "A seat move is written only for a PROCESSING request under the mover's lease.",
		file: "request.go",
		old:  "cond: all(heldUnderLease, atEpoch),",
		new:  "cond: atEpoch,",
		pkg:  ".",
		run:  "^TestSeatDelaysRaceCancelRequest$/^workers_7_s_apart_and_a_takeover_with_the_old_pool_claim_on_the_wire$",
	},
	{
		name: "prequeue-click-order",
		rule: "A pre-queue is served in its drawn order, not in the order of the clicks.",
		file: "internal/drawrun/serve.go",
		old:  "\tserved := 0\n\tfor len(waiting) > 0 {",
		new:  "\twaiting = merge(waiting, nil) // queue order\n\tserved := 0\n\tfor len(waiting) > 0 {",
		pkg:  ".",
		run:  "^(TestPrequeueServesTheDrawnOrderFirst|TestVerifyPrequeueCatchesABrokenOrder)$",
	},
	{
		name: "prequeue-wave-oversize",
		rule: "A pre-queue's serve wave is never larger than the seats left, so that no entry takes a seat an entry before it needs.",
		file: "internal/drawrun/serve.go",
		old:  "int(min(int64(cfg.Concurrency), left, int64(len(waiting))))",
		new:  "int(min(int64(cfg.Concurrency), int64(len(waiting))))",
		pkg:  ".",
		run:  "^(TestPrequeueServesTheDrawnOrderFirst|TestVerifyPrequeueCatchesABrokenOrder)$",
	},
	{
		name: "verify-prequeue-no-hash",
		rule: "VerifyPrequeue reads back the recorded set of entries against the hash (and count) the freeze recorded.",
		file: "internal/drawproof/prequeue.go",
		old:  "ids, err := Set(ctx, src, p.Config, p.Record, onTable, problem)",
		new:  "ids, err := Set(ctx, src, p.Config, p.Record, onTable, func(string, ...any) {})",
		pkg:  ".",
		run:  "^TestVerifyPrequeueCatchesAnAlteredRecord$/^a_recorded_entry_dropped_from_the_set$",
	},
	{
		name: "hold-sweep-queue-order",
		rule: "The hold sweep serves a pre-queue's waitlist in the drawn order before the sale's, not in queue order.",
		file: "internal/holdsweep/waitlist.go",
		old:  "if left > 0 && s.budget > 0 && s.p.Event.Prequeue {",
		new:  "if false && left > 0 && s.budget > 0 && s.p.Event.Prequeue {",
		pkg:  ".",
		run:  "^(TestPrequeueWithHoldsServesTheWaitlistInTheDrawnOrder|TestPrequeueHoldSweepStopsAtAnUndecidedEntry)$",
	},
}

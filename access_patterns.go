package asyncevent

// The access-pattern table as the code holds it: every row, in the order of the
// table in doc.go (a test holds doc.go to these declarations), and what is read off
// them.

// declaredRows lists every row, in the order of the access-pattern table.
func declaredRows() []*row {
	return []*row{
		&participateRow, &createRequestRow, &incompleteRequestRow, &releaseLockRow, &requestAbsentRow, &lockOfRequestRow, &markQueuedRow, &enqueueFailedRow,
		&startProcessingRow, &extendLeaseRow, &claimSeatRow, waveClaimRows[2], &takeSeatRow, &bindSeatRow, &seatClosedRow, &moveSeatRow, &shardEmptyRow, &shardSoldOutRow, &capacityRejectedRow, &soldOutRow, &lateRejectedRow, &lateSoldOutRow,
		&holdRecordRow, &bindHoldRow, &takeHoldRow, &waitlistRow, &waitlistLeasedRow, &confirmRow, &releaseRow, &waitlistLeftRow,
		&expireRow, &seatReturnedRow, &holdClearedRow, &serveRow, &returnedSeatTakenRow, &waitlistClosedRow, &sweepLeaseRow,
		&lotteryCollectRow, &lotteryWinRow, &lotteryLoseRow, &lotteryNotDrawnRow, &lotteryClosedRow, &finalFailureRow, &entryFailureRow,
		&statusLogRow, &createEventRow, &eventClosedRow, &eventPausedRow, &eventResumedRow, &endExtendedRow, &cutoffExtendedRow, &startExtendedRow, &holdEventEndRow, &drawNotBegunRow, &auditRow, &operationRow, &eventEntryRow, &eventEntryGoneRow,
		&progressRow, &waitlistCountedRow, &seatsAddedRow, &shardSeatsAddedRow, &poolMarkedRow, &poolSeatsAddedRow, &poolClaimRow, &poolSeatClosedRow, &cancelRow, &poolCancelledRow, &poolVersionRow, &drawFreezeRow, &eventDrawingRow, &entriesChunkRow, &drawEntriesRow, &drawAnnounceRow, &eventAnnouncedRow,
		&admissionLeaseRow, &admissionWaveRow, &admissionLateWaveRow, &admissionWaveDoneRow, &admissionLateRow, &admissionRefusingRow,
	}
}

// CanTransition reports whether a row of the access-pattern table writes status to
// on a request in status from: the forward path, PROCESSING → PROCESSING (a later
// delivery takes over an expired lease), RECEIVED → PROCESSING (the worker got the
// message before ingest wrote QUEUED), a lottery entry's QUEUED → QUEUED when a
// worker collects it, its RECEIVED or QUEUED → SUCCEEDED or REJECTED at the draw,
// a failure from any status that is not final, and an operator's cancel of a
// first-come SUCCEEDED (CancelRequest).
func CanTransition(from, to Status) bool {
	for _, r := range declaredRows() {
		if r.to == to && r.leaves(from) {
			return true
		}
	}
	return false
}

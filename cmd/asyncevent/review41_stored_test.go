package main

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
)

// Review 41: the lists' -json read a page from an index (eventually consistent, and a
// GSI lags its table) and then the rows again with BatchGetItem. mergeStored adds
// every stored attribute the first read lacked, not only the bookkeeping the caller's
// type leaves out, so a request the index still shows QUEUED and the second read finds
// SUCCEEDED prints as status QUEUED with resultCode SUCCESS and a finishedAt: a row
// that never existed. (The old CLI printed the one read it made.)
func TestReview41MergeStoredMixesTwoReads(t *testing.T) {
	listed := &asyncevent.Request{RequestID: "r1", EventID: "e", UserID: "u", EventType: asyncevent.FirstCome,
		Status: asyncevent.StatusQueued, UIResult: asyncevent.UIPending, RequestedAt: 1, QueuedAt: 2}
	later := *listed
	later.Status, later.UIResult, later.ResultCode, later.StartedAt, later.FinishedAt =
		asyncevent.StatusSucceeded, asyncevent.UISuccess, asyncevent.ResultSuccess, 3, 4
	row, err := attributevalue.MarshalMap(later)
	require.NoError(t, err)

	got := fieldsJSON(mergeStored(fieldsOf(listed), row))
	assert.Equal(t, asyncevent.StatusQueued, got["status"])
	assert.NotContains(t, got, "resultCode", "a QUEUED request printed with the resultCode of a later read")
	assert.NotContains(t, got, "finishedAt", "a QUEUED request printed with the finishedAt of a later read")
}

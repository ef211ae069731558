package asyncevent

// EventCapacity is the EventCapacity item of a FIRST_COME event (PK EVENT#<eventId>,
// SK CAPACITY). capacityRemaining only goes down, by one per winner, under the
// condition capacityRemaining > 0, so the event has at most capacityTotal winners.
type EventCapacity struct {
	EntityType        EntityType  `dynamodbav:"entityType"` // CAPACITY
	EventID           string      `dynamodbav:"eventId"`
	CapacityTotal     int64       `dynamodbav:"capacityTotal"`
	CapacityRemaining int64       `dynamodbav:"capacityRemaining"`
	UpdatedAt         EpochMillis `dynamodbav:"updatedAt"`
}

type capacityItem struct {
	Key
	EventCapacity
}

